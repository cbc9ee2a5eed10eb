import { useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { MONEY_MOVES, type MoneyMove } from '../../../approvals/money-moves.ts';
import { api } from '../api.ts';
import { moveInWords } from '../audit-words.tsx';
import { ClickAction, Failure, Outcome, Time, useAction, useCan, usePages } from '../ui.tsx';
import { PendingProposals } from './approvals.tsx';

/**
 * Approval rules (`approval-rule list` and `approval-rule propose` of the CLI): how many distinct
 * approvers each money move needs, optionally only above an amount. Making, changing or retiring
 * a rule is a proposal another admin approves (the same `admin.approvalRules.propose` and
 * `admin.approvals.*` as the CLI, so the same roles, four eyes and audit rows).
 */

type Rule = Awaited<ReturnType<typeof api.admin.approvalRules.list.query>>['data'][number];

const BOTH = ['approver', 'admin'] as const;

interface Draft {
  action: MoneyMove;
  above: string;
  currency: string;
  approvers: number;
  roles: ('approver' | 'admin')[];
  note: string;
}
const EMPTY: Draft = {
  action: 'inflow.return',
  above: '',
  currency: '',
  approvers: 2,
  roles: [...BOTH],
  note: '',
};

/** The rule a row shows, in words: "above 1000 USDT" or "every amount". */
const scope = (r: Pick<Rule, 'above' | 'currency'>) =>
  r.above ? `above ${Number(r.above).toLocaleString('en-US')} ${r.currency}` : 'every amount';

function ProposeRule({ draft, setDraft }: { draft: Draft; setDraft: (d: Draft) => void }) {
  // The form clears once the proposal is made, before its outcome shows; a refusal keeps what was typed.
  const action = useAction('propose-rule', 'Propose rule', async (d: Draft) => {
    const proposed = await api.admin.approvalRules.propose.mutate({
      action: d.action,
      ...(d.above.trim() ? { above: d.above.trim(), currency: d.currency.trim().toUpperCase() } : {}),
      approvers: d.approvers,
      roles: d.roles,
      ...(d.note.trim() ? { note: d.note.trim() } : {}),
    });
    setDraft(EMPTY);
    return proposed;
  });
  const set = (change: Partial<Draft>) => setDraft({ ...draft, ...change });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    action.mutate(draft);
  };
  const toggle = (role: 'approver' | 'admin') =>
    set({
      roles: draft.roles.includes(role) ? draft.roles.filter((r) => r !== role) : [...draft.roles, role],
    });
  return (
    <form className="rule-form" onSubmit={submit} data-testid="propose-rule">
      <h2>Propose a rule, or a change of one</h2>
      <p className="muted">
        A rule with the same money move and threshold as one in force replaces it. Another admin approves the
        proposal; it applies to proposals made after that.
      </p>
      <label>
        Money move{' '}
        <select
          name="action"
          value={draft.action}
          onChange={(e) => set({ action: e.target.value as MoneyMove })}
        >
          {MONEY_MOVES.map((m) => (
            <option key={m} value={m}>
              {moveInWords(m)} ({m})
            </option>
          ))}
        </select>
      </label>
      <label>
        Above (optional){' '}
        <input
          name="above"
          inputMode="decimal"
          placeholder="1000"
          value={draft.above}
          onChange={(e) => set({ above: e.target.value })}
        />
      </label>
      <label>
        Currency{' '}
        <input
          name="currency"
          placeholder="USDT"
          size={6}
          value={draft.currency}
          required={draft.above.trim() !== ''}
          onChange={(e) => set({ currency: e.target.value })}
        />
      </label>
      <label>
        Approvers{' '}
        <select
          name="approvers"
          value={draft.approvers}
          onChange={(e) => set({ approvers: Number(e.target.value) })}
        >
          {[1, 2, 3].map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </label>
      <fieldset>
        <legend>Who may approve</legend>
        {BOTH.map((role) => (
          <label key={role}>
            <input
              type="checkbox"
              name={`role-${role}`}
              checked={draft.roles.includes(role)}
              onChange={() => toggle(role)}
            />{' '}
            {role}
          </label>
        ))}
      </fieldset>
      <label>
        Note{' '}
        <input
          name="note"
          placeholder="why (optional)"
          value={draft.note}
          onChange={(e) => set({ note: e.target.value })}
        />
      </label>
      <button
        type="submit"
        className="action primary"
        disabled={action.isPending || draft.roles.length === 0}
      >
        Propose
      </button>
      <Outcome pending={action.pending} done="Proposed: another admin approves it below" />
    </form>
  );
}

export function RulesPage() {
  const isAdmin = useCan('admin');
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const rules = useQuery({
    queryKey: ['admin.approvalRules.list'],
    queryFn: () => api.admin.approvalRules.list.query({}),
  });
  const pending = usePages(['admin.approvals.list', 'rules'], (cursor) =>
    api.admin.approvals.list.query({ state: 'PENDING', action: 'approval_rule.set', limit: 50, cursor }),
  );
  return (
    <main className="page rules">
      <h1>Approval rules</h1>
      <p className="lead">
        How many different approvers each money move needs, and with which roles. Without a rule of its own, a
        move needs one approver or admin other than its proposer. The strictest rule that matches a proposal
        applies (the most approvers); amounts in another currency compare at the payout's locked rate. A rule
        is set when it is proposed: changing it later changes only proposals made after.
      </p>
      <Failure error={rules.error} />
      <table data-testid="rules">
        <thead>
          <tr>
            <th>Money move</th>
            <th>Applies to</th>
            <th>Approvers needed</th>
            <th>Who may approve</th>
            <th>In force since (UTC)</th>
            <th>Actions</th>
          </tr>
        </thead>
        <tbody>
          {rules.data?.data.map((r) => (
            <tr
              key={r.id ?? `default:${r.action}`}
              data-rule={r.id ?? `default:${r.action}`}
              data-action={r.action}
              className={r.id ? undefined : 'default'}
            >
              <td>
                {moveInWords(r.action)} <code className="muted">{r.action}</code>
              </td>
              <td>{scope(r)}</td>
              <td className="count">{r.approvers}</td>
              <td>{r.roles.join(' or ')}</td>
              <td>{r.id ? <Time at={r.created_at} /> : <span className="muted">built in</span>}</td>
              <td className="actions">
                {isAdmin && r.id ? (
                  <>
                    <button
                      type="button"
                      className="link"
                      onClick={() =>
                        setDraft({
                          action: r.action as MoneyMove,
                          above: r.above ?? '',
                          currency: r.currency ?? '',
                          approvers: r.approvers,
                          roles: r.roles as ('approver' | 'admin')[],
                          note: '',
                        })
                      }
                    >
                      Change
                    </button>{' '}
                    {r.approvers > 1 || r.roles.length < 2 ? (
                      <ClickAction
                        actionKey={`retire-rule:${r.id}`}
                        label="Retire"
                        done="Proposed: another admin approves it below"
                        confirm={{
                          question: 'Propose setting this rule back to the default (one approver or admin)?',
                          yes: 'Yes, propose it',
                        }}
                        run={() =>
                          api.admin.approvalRules.propose.mutate({
                            action: r.action as MoneyMove,
                            ...(r.above ? { above: r.above, currency: r.currency ?? '' } : {}),
                            approvers: 1,
                            roles: [...BOTH],
                            note: `retire the rule: ${r.action} ${scope(r)} back to one approver`,
                          })
                        }
                      />
                    ) : null}
                  </>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <PendingProposals
        queue="rule-proposals"
        title="Rule changes waiting for a second admin"
        pending={pending}
      />
      {isAdmin ? (
        <ProposeRule draft={draft} setDraft={setDraft} />
      ) : (
        <p className="muted">Admins propose rules; another admin approves them.</p>
      )}
    </main>
  );
}
