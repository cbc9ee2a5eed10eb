import { useQuery } from '@tanstack/react-query';
import { Fragment } from 'react';
import { api } from '../api.ts';
import { Failure, Prose, Time } from '../ui.tsx';
import { Svg } from './svg.tsx';

/**
 * The compliance view of the machines (what `/docs/machines` shows to everyone) with how many
 * objects are in each state now: every state in plain words, where the money is, who can move it.
 * Where the state name alone cannot say where the money is (a failed payout), the ledger's cases
 * are rows of their own under the state, each counted apart.
 */

type Machines = Awaited<ReturnType<typeof api.admin.machines.query>>;
type Machine = Machines['machines'][number];

const count = (machine: Machine, n: number | null) =>
  machine.counted && n !== null ? n.toLocaleString('en-US') : '—';

function Chip({ color }: { color: string }) {
  return <span className="money-chip" style={{ background: color }} />;
}

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
            <Fragment key={s.path}>
              <tr data-state={s.path} className={s.parent ? 'inner' : undefined}>
                <td>
                  <code>{s.path}</code>
                  {s.final ? <span className="muted"> · final</span> : null}
                </td>
                <td>
                  <Prose text={s.description} />
                </td>
                <td>
                  {s.cases.length > 0 ? (
                    'as the ledger says (cases below)'
                  ) : s.money ? (
                    <>
                      <Chip color={money.get(s.money)?.color ?? 'transparent'} />
                      {money.get(s.money)?.label ?? s.money}
                    </>
                  ) : machine.holds_money ? (
                    ''
                  ) : (
                    'no money'
                  )}
                </td>
                <td className="count">{count(machine, s.count)}</td>
              </tr>
              {s.cases.map((c) => (
                <tr key={c.code} className="money-case" data-case-of={s.path} data-case={c.code}>
                  <td>
                    <code>{c.code}</code>
                  </td>
                  <td>
                    <Prose text={c.description} />
                    <div className="muted">
                      How the ledger tells it: <Prose text={c.ledger} />.
                    </div>
                  </td>
                  <td>
                    <Chip color={money.get(c.money)?.color ?? 'transparent'} />
                    {c.label}
                  </td>
                  <td className="count">{count(machine, c.count)}</td>
                </tr>
              ))}
            </Fragment>
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
                <td>
                  {t.by.map((b, i) => (
                    <Fragment key={b}>
                      {i > 0 ? ', or ' : ''}
                      <span style={{ color: actors.get(b)?.color }}>{actors.get(b)?.label ?? b}</span>
                    </Fragment>
                  ))}
                </td>
                <td>
                  <Prose text={t.guard?.text ?? ''} />
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

/** What the colours of the pictures and tables mean, and the fees the service keeps. */
function Legend({ model }: { model: Machines }) {
  return (
    <section className="machines-legend" aria-label="How to read the pages">
      <div>
        <h2>Where the money is</h2>
        <ul>
          {model.money_places.map((m) => (
            <li key={m.code} data-money={m.code}>
              <Chip color={m.color} />
              <strong>{m.label}</strong>: <Prose text={m.text} />
            </li>
          ))}
        </ul>
      </div>
      <div>
        <h2>Who acts (arrow colours)</h2>
        <ul>
          {model.actors.map((a) => (
            <li key={a.code} data-actor={a.code}>
              <span className="actor-line" style={{ background: a.color }} />
              <strong style={{ color: a.color }}>{a.label}</strong>: {a.text}
            </li>
          ))}
        </ul>
      </div>
      <div>
        <h2>Fees kept by the service</h2>
        <ul>
          {model.fees.map((f) => (
            <li key={f.kind} data-fee={f.kind}>
              <strong>{f.label}</strong> (<code>{f.account}</code>): <Prose text={f.text} />
            </li>
          ))}
        </ul>
      </div>
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
        {model ? <Time at={model.counted_at} /> : '…'}, refreshed every 30 s); where a state name alone cannot
        say where the money is, the ledger's cases are counted apart under it. The same pages without counts
        are public at <a href="/docs/machines">/docs/machines</a>.
      </p>
      <Failure error={machines.error} />
      {model ? <Legend model={model} /> : null}
      {model?.machines.map((m) => (
        <MachineSection key={m.name} machine={m} model={model} />
      ))}
    </main>
  );
}
