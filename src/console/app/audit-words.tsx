import type { ReactNode } from 'react';
import { Id, Time } from './ui.tsx';

/**
 * The audit trail in plain words: what an operator did (not the procedure's name), to what, and
 * how it ended (not the outcome's code). The procedure, the codes and the raw arguments stay in
 * the row's titles and in `audit list` of the CLI.
 */

type Args = Record<string, unknown>;

const text = (v: unknown): string => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v));

const MOVES: Record<string, string> = {
  'inflow.attribute': 'attributing money to a payout',
  'inflow.return': 'recording money as returned',
  'payout.fail': 'failing a held payout',
  'refund.retry': 'retrying a failed refund',
  'refund.raise': 'raising a held refund',
  'overpayment.return': 'returning a set-aside overpayment',
  'recon.resolve': 'moving money to resolve a reconciliation difference',
  'payee.accept': "accepting a held payout's payee name",
};

/** A money move's name in words (`inflow.return`: "recording money as returned"). */
export const moveInWords = (action: string): string => MOVES[action] ?? action;

/** What each `admin.*` change is, as a phrase after the operator's name. */
const ACTIONS: Record<string, (a: Args) => string> = {
  'admin.tenant.create': (a) =>
    `created the tenant “${text(a['name'])}”${a['approved'] ? ', approved for payouts' : ''}`,
  'admin.tenant.approve': () => 'approved a tenant for payouts',
  'admin.key.issue': (a) =>
    `issued an API key${Array.isArray(a['scopes']) ? ` with the scopes ${a['scopes'].join(', ')}` : ''}`,
  'admin.key.revoke': () => 'revoked an API key',
  'admin.operators.create': (a) => `created the operator “${text(a['name'])}” as ${text(a['role'])}`,
  'admin.operators.role': (a) => `changed an operator's role to ${text(a['role'])}`,
  'admin.operators.revoke': () => "revoked an operator's token",
  'admin.approvalRules.propose': (a) =>
    `proposed the approval rule: ${moveInWords(text(a['action']))}${
      a['above'] ? ` above ${text(a['above'])} ${text(a['currency'])}` : ''
    } needs ${text(a['approvers'])} approver${a['approvers'] === 1 ? '' : 's'}${
      Array.isArray(a['roles']) ? ` (${a['roles'].join(' or ')})` : ''
    }`,
  'admin.approvals.approve': () => 'approved a proposal',
  'admin.approvals.reject': () => 'rejected a proposal',
  'admin.settlement.attribute': () => 'proposed attributing money to a payout',
  'admin.settlement.returnInflow': () => 'proposed recording money as returned to the merchant',
  'admin.settlement.failPayout': () => 'proposed failing a held payout',
  'admin.payees.accept': () => "proposed accepting a held payout's payee name",
  'admin.payees.setPolicy': (a) => `set a tenant's payee name policy to ${text(a['policy'])}`,
  'admin.refunds.retry': () => 'proposed retrying a failed refund',
  'admin.refunds.raise': () => 'proposed raising a refund of held money',
  'admin.recon.run': (a) =>
    `reconciled ${text(a['date'])} against ${a['rail'] ? text(a['rail']) : 'every rail'}`,
  'admin.recon.resolve': () => 'resolved a reconciliation difference that moves no money',
  'admin.recon.propose': (a) =>
    `proposed resolving a reconciliation difference by ${
      a['resolution'] === 'REFUNDED_RETURN' ? 'refunding a returned payout' : 'booking what the rail shows'
    }`,
  'admin.webhooks.redeliver': (a) =>
    a['delivery_id']
      ? 'sent a dead webhook notification again'
      : "sent a tenant's dead webhook notifications again",
  'admin.ledger.check': (a) =>
    `checked the ledger's invariants (${a['all'] ? 'every payout' : 'payouts changed in the last hour'})`,
};

/** What the operator did, in words; an action this console does not know keeps its name. */
export function actionInWords(action: string, args: Args, outcome: string): string {
  if (action === 'admin.approvals.reject' && outcome === 'WITHDRAWN') return 'withdrew their proposal';
  return ACTIONS[action]?.(args) ?? `called ${action.replace(/^admin\./, '')}`;
}

/** How it ended, in words. */
export function outcomeInWords(outcome: string): string {
  const partial = /^APPROVED_(\d+)_OF_(\d+)$/.exec(outcome);
  if (partial) return `approval ${partial[1]} of ${partial[2]}: still waiting`;
  return (
    {
      OK: 'done',
      PENDING: 'proposed: waiting for approval',
      APPROVED: 'approved: it ran',
      REJECTED: 'rejected: nothing moved',
      WITHDRAWN: 'withdrawn: nothing moved',
      FAILED: 'approved, but it could not run: nothing moved',
      EXPIRED: 'expired: nothing moved',
    }[outcome] ?? outcome
  );
}

/** What an argument is, for the details: the ids and times a call named. */
const LABELS: Record<string, string> = {
  tenant_id: 'tenant',
  key_id: 'key',
  operator_id: 'operator',
  payout_id: 'payout',
  inflow_id: 'inflow',
  refund_id: 'refund',
  approval_id: 'proposal',
  break_id: 'difference',
  delivery_id: 'notification',
  since: 'since',
  until: 'until',
};

/** Arguments the phrase already says, or that are not worth a line. */
const SAID = new Set([
  'name',
  'approved',
  'scopes',
  'role',
  'action',
  'above',
  'currency',
  'approvers',
  'roles',
]);
const SAID_BY: Record<string, string[]> = {
  'admin.payees.setPolicy': ['policy'],
  'admin.recon.run': ['date', 'rail'],
  'admin.recon.propose': ['resolution'],
  'admin.ledger.check': ['all'],
  'admin.tenant.create': ['payee_name_policy'],
};

/** The note, then the ids and times of a call that the phrase does not say already. */
export function ArgumentsInWords({ action, args }: { action: string; args: Args }) {
  const parts: ReactNode[] = [];
  const note = args['note'];
  if (typeof note === 'string' && note) parts.push(<q key="note">{note}</q>);
  for (const [key, value] of Object.entries(args)) {
    if (key === 'note' || SAID.has(key) || SAID_BY[action]?.includes(key)) continue;
    if (value === undefined || value === null || key === 'limit' || key === 'cursor') continue;
    const label = LABELS[key] ?? key.replaceAll('_', ' ');
    const shown =
      (key === 'since' || key === 'until') && typeof value === 'string' ? (
        <Time at={value} />
      ) : key.endsWith('_id') && typeof value === 'string' ? (
        <Id id={value} />
      ) : (
        text(value)
      );
    parts.push(
      <span key={key} className="arg">
        {label} {shown}
      </span>,
    );
  }
  return <span className="args">{parts}</span>;
}
