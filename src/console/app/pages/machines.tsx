import { useQuery } from '@tanstack/react-query';
import { api } from '../api.ts';
import { Failure, Prose, Time } from '../ui.tsx';
import { Svg } from './svg.tsx';

/**
 * The compliance view of the machines (what `/docs/machines` shows to everyone) with how many
 * objects are in each state now: every state in plain words, where the money is, who can move it.
 */

type Machines = Awaited<ReturnType<typeof api.admin.machines.query>>;
type Machine = Machines['machines'][number];

function MachineSection({ machine, model }: { machine: Machine; model: Machines }) {
  const money = new Map(model.money_places.map((m) => [m.code, m]));
  const actors = new Map(model.actors.map((a) => [a.code, a]));
  return (
    <section className="machine" data-machine={machine.name}>
      <h2>
        {machine.title} <small className="muted">{machine.source}</small>
      </h2>
      <p>
        <Prose text={machine.summary} />
      </p>
      <table className="machine-counts">
        <thead>
          <tr>
            <th>State</th>
            <th>What it means</th>
            <th>Where the money is</th>
            <th>Now</th>
          </tr>
        </thead>
        <tbody>
          {machine.states.map((s) => (
            <tr key={s.path} data-state={s.path} className={s.parent ? 'inner' : undefined}>
              <td>
                <code>{s.path}</code>
                {s.final ? <span className="muted"> · final</span> : null}
              </td>
              <td>
                <Prose text={s.description} />
              </td>
              <td>
                {s.money ? (money.get(s.money)?.label ?? s.money) : machine.holds_money ? '' : 'no money'}
              </td>
              <td className="count">
                {machine.counted && s.count !== null ? s.count.toLocaleString('en-US') : '—'}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <details>
        <summary>Transitions: who can cause each one, and when</summary>
        <table>
          <thead>
            <tr>
              <th>#</th>
              <th>From → to</th>
              <th>What happens</th>
              <th>Who</th>
              <th>Condition</th>
            </tr>
          </thead>
          <tbody>
            {machine.transitions.map((t) => (
              <tr key={t.number}>
                <td>{t.number}</td>
                <td>
                  <code>
                    {t.from ?? '(start)'} → {t.to}
                  </code>
                </td>
                <td>
                  <Prose text={t.description} />
                </td>
                <td>{t.by.map((b) => actors.get(b)?.label ?? b).join(', or ')}</td>
                <td>
                  <Prose text={t.guard?.text} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
      <Svg src={machine.diagram.svg} />
    </section>
  );
}

export function MachinesPage() {
  const machines = useQuery({
    queryKey: ['admin.machines'],
    queryFn: () => api.admin.machines.query(),
    refetchInterval: 30_000,
  });
  const model = machines.data;
  return (
    <main className="page machines">
      <h1>Machines</h1>
      <p className="lead">
        Every status the service stores belongs to one of these machines. Counts are live (read{' '}
        {model ? <Time at={model.counted_at} /> : '…'}, refreshed every 30 s). The same pages without counts
        are public at <a href="/docs/machines">/docs/machines</a>.
      </p>
      <Failure error={machines.error} />
      {model?.machines.map((m) => (
        <MachineSection key={m.name} machine={m} model={model} />
      ))}
    </main>
  );
}
