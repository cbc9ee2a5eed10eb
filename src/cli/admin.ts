/**
 * The admin CLI: `npm run -s admin -- <command>`. Talks to the running service over tRPC
 * (`admin.*` procedures at SERVICE_URL/trpc) with an operator's token, and prints one JSON object
 * per command on stdout; lists print `{ data, meta }` (`meta.next_cursor` goes to `--cursor`).
 * Errors go to stderr as one JSON object with a non-zero exit (2 for a bad command line).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import {
  APPROVAL_ACTIONS,
  APPROVAL_STATUSES as APPROVAL_STATES,
  MONEY_MOVES,
} from '#src/approvals/entities.ts';
import { configSchema } from '#src/config.ts';
import { ROLES } from '#src/operators/roles.ts';
import { PAYEE_POLICIES } from '#src/payees/name-match.ts';
import { RECON_RAILS } from '#src/reconciliation/entities.ts';
import type { AppRouter } from '#src/router.ts';
import { isScope, MERCHANT_SCOPES, type Scope } from '#src/tenants/scopes.ts';

type Client = ReturnType<typeof createTRPCClient<AppRouter>>;
type Values = Record<string, string | boolean | undefined>;

/** A bad command line: reported with the usage of the command concerned, never the whole list. */
export class UsageError extends Error {
  readonly usage: string | undefined;
  constructor(message: string, usage?: string) {
    super(message);
    this.usage = usage;
  }
}

/** What `help` prints: text, not JSON. */
export class HelpText {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

interface Command<I = unknown> {
  /** Positional arguments and options as the usage shows them. */
  synopsis: string;
  summary: string;
  options?: Record<string, { type: 'string' | 'boolean' }>;
  /** Names of the positional arguments, all required. */
  positionals?: string[];
  /** Names of positional arguments that may follow the required ones. */
  optionalPositionals?: string[];
  /** The procedure's input from the command line; throws a UsageError before anything is sent. */
  input?(values: Values, positionals: string[]): I;
  call(client: Client, input: I): Promise<unknown>;
}

/** A command whose `call` is typed by its `input`. */
const command = <I>(c: Command<I>): Command => c as Command;

const PAGE_OPTIONS = { limit: { type: 'string' }, cursor: { type: 'string' } } as const;

/** `--limit` and `--cursor` of a list command (the page size is 1 to 100, 20 by default). */
function page(values: Values): { limit?: number; cursor?: string } {
  const cursor = values.cursor as string | undefined;
  if (values.limit === undefined) return { cursor };
  const limit = Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    throw new UsageError('--limit must be an integer from 1 to 100');
  return { limit, cursor };
}

function missing(option: string, what: string): never {
  throw new UsageError(`--${option} ${what} is required`);
}

function required(values: Values, option: string, what = option.toUpperCase()): string {
  const value = values[option];
  return typeof value === 'string' && value !== '' ? value : missing(option, what);
}

/** An option that takes one of a few values, or undefined when absent. */
function choice<T extends string>(values: Values, option: string, choices: readonly T[]): T | undefined {
  const value = values[option];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !(choices as readonly string[]).includes(value))
    throw new UsageError(`--${option} must be one of ${choices.join(', ')}`);
  return value as T;
}

function scopesOf(value: string | undefined): Scope[] | undefined {
  if (value === undefined) return undefined;
  const list = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = list.filter((s) => !isScope(s));
  if (unknown.length > 0) {
    throw new UsageError(
      `unknown scope${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; the scopes are ${MERCHANT_SCOPES.join(', ')}`,
    );
  }
  return list as Scope[];
}

/** Every command, by its words; the usage is generated from this table. */
const COMMANDS: Record<string, Command> = {
  'tenant create': command({
    synopsis: '--name NAME [--approved] [--payee-policy allow|hold|refuse]',
    summary: 'a new tenant: {"id","name","payouts_approved","payee_name_policy"}',
    options: { name: { type: 'string' }, approved: { type: 'boolean' }, 'payee-policy': { type: 'string' } },
    input: (v) => ({
      name: required(v, 'name'),
      approved: v.approved === true,
      payee_name_policy: choice(v, 'payee-policy', PAYEE_POLICIES),
    }),
    call: (c, input) => c.admin.tenant.create.mutate(input),
  }),
  'tenant approve': command({
    synopsis: 'TENANT_ID',
    summary: 'approve a tenant for payouts (KYC/KYB done)',
    positionals: ['TENANT_ID'],
    input: (_v, [id]) => ({ tenant_id: id! }),
    call: (c, input) => c.admin.tenant.approve.mutate(input),
  }),
  'tenant list': command({
    synopsis: '[--limit N] [--cursor CURSOR]',
    summary: 'tenants, newest first',
    options: PAGE_OPTIONS,
    input: page,
    call: (c, input) => c.admin.tenant.list.query(input),
  }),
  'key issue': command({
    synopsis: '--tenant TENANT_ID [--scopes s1,s2]',
    summary: 'an API key, shown once: {"id","api_key","scopes"} (default: every merchant scope)',
    options: { tenant: { type: 'string' }, scopes: { type: 'string' } },
    input: (v) => ({
      tenant_id: required(v, 'tenant', 'TENANT_ID'),
      scopes: scopesOf(v.scopes as string | undefined),
    }),
    call: async (c, input) => {
      const issued = await c.admin.key.issue.mutate(input);
      return { id: issued.id, api_key: issued.api_key, scopes: issued.scopes };
    },
  }),
  'key list': command({
    synopsis: '--tenant TENANT_ID [--limit N] [--cursor CURSOR]',
    summary: "a tenant's API keys, newest first: id, prefix, scopes, created_at, revoked_at (never the key)",
    options: { tenant: { type: 'string' }, ...PAGE_OPTIONS },
    input: (v) => ({ tenant_id: required(v, 'tenant', 'TENANT_ID'), ...page(v) }),
    call: (c, input) => c.admin.key.list.query(input),
  }),
  'key revoke': command({
    synopsis: 'KEY_ID',
    summary: 'revoke an API key',
    positionals: ['KEY_ID'],
    input: (_v, [id]) => ({ key_id: id! }),
    call: (c, input) => c.admin.key.revoke.mutate(input),
  }),
  'operator create': command({
    synopsis: `--name NAME --role ${ROLES.join('|')}`,
    summary:
      'a new operator, its token shown once: {"id","name","role","token"} (admin); once two admins exist, an approver or admin starts as viewer with an "approval" to raise it',
    options: { name: { type: 'string' }, role: { type: 'string' } },
    input: (v) => ({ name: required(v, 'name'), role: choice(v, 'role', ROLES) ?? missing('role', 'ROLE') }),
    call: async (c, input) => {
      const { approval, ...created } = await c.admin.operators.create.mutate(input);
      return approval ? { ...created, approval } : created;
    },
  }),
  'operator role': command({
    synopsis: `OPERATOR_ID --role ${ROLES.join('|')} [--note TEXT]`,
    summary:
      'change a role: lowering is immediate; raising to approver or admin, once two admins exist, is a proposal another admin approves: {"operator","approval"} (admin)',
    positionals: ['OPERATOR_ID'],
    options: { role: { type: 'string' }, note: { type: 'string' } },
    input: (v, [id]) => ({
      operator_id: id!,
      role: choice(v, 'role', ROLES) ?? missing('role', 'ROLE'),
      note: v.note as string | undefined,
    }),
    call: (c, input) => c.admin.operators.role.mutate(input),
  }),
  'approval-rule list': command({
    synopsis: `[--action ${MONEY_MOVES.join('|')}]`,
    summary:
      'the approval rules in force, each action\'s default first: {"data":[{"action","above","currency","approvers","roles",...}]}',
    options: { action: { type: 'string' } },
    input: (v) => ({ action: choice(v, 'action', MONEY_MOVES) }),
    call: (c, input) => c.admin.approvalRules.list.query(input),
  }),
  'approval-rule propose': command({
    synopsis: `--action ${MONEY_MOVES.join('|')} [--above AMOUNT --currency CUR] --approvers 1|2|3 [--roles approver,admin] [--note TEXT]`,
    summary:
      'propose a rule (or a change of the rule with the same action and threshold); another admin approves it, and it applies to proposals made after: {"approval"} (admin)',
    options: {
      action: { type: 'string' },
      above: { type: 'string' },
      currency: { type: 'string' },
      approvers: { type: 'string' },
      roles: { type: 'string' },
      note: { type: 'string' },
    },
    input: (v) => {
      const approvers = Number(required(v, 'approvers', 'N'));
      if (!Number.isInteger(approvers) || approvers < 1 || approvers > 3)
        throw new UsageError('--approvers must be 1, 2 or 3');
      if ((v.above === undefined) !== (v.currency === undefined))
        throw new UsageError('--above and --currency go together: give both or neither');
      const roles =
        v.roles === undefined
          ? undefined
          : String(v.roles)
              .split(',')
              .map((r) => r.trim())
              .filter(Boolean);
      for (const r of roles ?? [])
        if (r !== 'approver' && r !== 'admin') throw new UsageError('--roles takes approver, admin or both');
      return {
        action: choice(v, 'action', MONEY_MOVES) ?? missing('action', 'ACTION'),
        above: v.above as string | undefined,
        currency: v.currency as string | undefined,
        approvers,
        roles: roles as ('approver' | 'admin')[] | undefined,
        note: v.note as string | undefined,
      };
    },
    call: async (c, input) => c.admin.approvalRules.propose.mutate(input),
  }),
  'operator list': command({
    synopsis: '[--active] [--limit N] [--cursor CURSOR]',
    summary: 'operators, newest first (--active: not revoked)',
    options: { active: { type: 'boolean' }, ...PAGE_OPTIONS },
    input: (v) => ({ active: v.active === true || undefined, ...page(v) }),
    call: (c, input) => c.admin.operators.list.query(input),
  }),
  'operator revoke': command({
    synopsis: 'OPERATOR_ID',
    summary: "revoke an operator's token (admin)",
    positionals: ['OPERATOR_ID'],
    input: (_v, [id]) => ({ operator_id: id! }),
    call: (c, input) => c.admin.operators.revoke.mutate(input),
  }),
  whoami: command({
    synopsis: '',
    summary: 'the operator behind the token: {"id","name","role"}',
    call: (c) => c.admin.me.query(),
  }),
  'inflow list': command({
    synopsis: '[--tenant TENANT_ID] [--state HELD|UNMATCHED] [--unattributed] [--limit N] [--cursor CURSOR]',
    summary: 'settlements waiting for a decision, oldest first (--unattributed: money no payout took)',
    options: {
      tenant: { type: 'string' },
      state: { type: 'string' },
      unattributed: { type: 'boolean' },
      ...PAGE_OPTIONS,
    },
    input: (v) => ({
      tenant_id: v.tenant as string | undefined,
      state: choice(v, 'state', ['HELD', 'UNMATCHED'] as const),
      ...(v.unattributed ? { unattributed: true } : {}),
      ...page(v),
    }),
    call: (c, input) => c.admin.settlement.inflows.query(input),
  }),
  'inflow attribute': command({
    synopsis: 'INFLOW_ID --payout PAYOUT_ID --note TEXT',
    summary: 'propose attributing late or short money to a payout waiting for it (four eyes)',
    options: { payout: { type: 'string' }, note: { type: 'string' } },
    positionals: ['INFLOW_ID'],
    input: (v, [id]) => ({
      inflow_id: id!,
      payout_id: required(v, 'payout', 'PAYOUT_ID'),
      note: required(v, 'note', 'TEXT'),
    }),
    call: (c, input) => c.admin.settlement.attribute.mutate(input),
  }),
  'inflow return': command({
    synopsis: 'INFLOW_ID --reference REF --note TEXT',
    summary:
      "propose recording money sent back to the merchant by hand, with the return's bank reference or transaction hash (four eyes)",
    options: { reference: { type: 'string' }, note: { type: 'string' } },
    positionals: ['INFLOW_ID'],
    input: (v, [id]) => {
      const note = required(v, 'note', 'TEXT');
      return { inflow_id: id!, reference: required(v, 'reference', 'REF'), note };
    },
    call: (c, input) => c.admin.settlement.returnInflow.mutate(input),
  }),
  'payout fail': command({
    synopsis: 'PAYOUT_ID --note TEXT',
    summary:
      'propose failing a payout held for review (underpaid: its refund follows; payee name: nothing to refund) (four eyes)',
    options: { note: { type: 'string' } },
    positionals: ['PAYOUT_ID'],
    input: (v, [id]) => ({ payout_id: id!, note: required(v, 'note', 'TEXT') }),
    call: (c, input) => c.admin.settlement.failPayout.mutate(input),
  }),
  'payee held': command({
    synopsis: '[--limit N] [--cursor CURSOR]',
    summary: "payouts held because the payee's name does not match the institution's, oldest first",
    options: { ...PAGE_OPTIONS },
    input: (v) => page(v),
    call: (c, input) => c.admin.payees.held.query(input),
  }),
  'payee accept': command({
    synopsis: 'PAYOUT_ID --note TEXT',
    summary:
      "propose accepting a held payout's payee name as it is; it then gets its instruction (four eyes)",
    options: { note: { type: 'string' } },
    positionals: ['PAYOUT_ID'],
    input: (v, [id]) => ({ payout_id: id!, note: required(v, 'note', 'TEXT') }),
    call: (c, input) => c.admin.payees.accept.mutate(input),
  }),
  'tenant payee-policy': command({
    synopsis: 'TENANT_ID --policy allow|hold|refuse',
    summary: 'what a payout whose payee name does not match becomes: paid, held for an operator, or refused',
    options: { policy: { type: 'string' } },
    positionals: ['TENANT_ID'],
    input: (v, [id]) => ({
      tenant_id: id!,
      policy: choice(v, 'policy', PAYEE_POLICIES) ?? missing('policy', 'allow|hold|refuse'),
    }),
    call: (c, input) => c.admin.payees.setPolicy.mutate(input),
  }),
  'refund list-failed': command({
    synopsis: '[--tenant TENANT_ID] [--limit N] [--cursor CURSOR]',
    summary: 'FAILED refunds, oldest first',
    options: { tenant: { type: 'string' }, ...PAGE_OPTIONS },
    input: (v) => ({ tenant_id: v.tenant as string | undefined, ...page(v) }),
    call: (c, input) => c.admin.refunds.failed.query(input),
  }),
  'refund held': command({
    synopsis: '[--tenant TENANT_ID] [--limit N] [--cursor CURSOR]',
    summary: 'failed payouts holding money without a refund, oldest first',
    options: { tenant: { type: 'string' }, ...PAGE_OPTIONS },
    input: (v) => ({ tenant_id: v.tenant as string | undefined, ...page(v) }),
    call: (c, input) => c.admin.refunds.held.query(input),
  }),
  'refund retry': command({
    synopsis: 'REFUND_ID --note TEXT',
    summary: 'propose sending a FAILED refund again after its destination was corrected (four eyes)',
    options: { note: { type: 'string' } },
    positionals: ['REFUND_ID'],
    input: (v, [id]) => ({ refund_id: id!, note: required(v, 'note', 'TEXT') }),
    call: (c, input) => c.admin.refunds.retry.mutate(input),
  }),
  'refund raise': command({
    synopsis: 'PAYOUT_ID --note TEXT',
    summary: 'propose refunding held money once the tenant has a destination (four eyes)',
    options: { note: { type: 'string' } },
    positionals: ['PAYOUT_ID'],
    input: (v, [id]) => ({ payout_id: id!, note: required(v, 'note', 'TEXT') }),
    call: (c, input) => c.admin.refunds.raise.mutate(input),
  }),
  'overpayment list': command({
    synopsis: '[--limit N] [--cursor CURSOR]',
    summary: 'successful payouts whose overpayment is set aside, owed back to the merchant, oldest first',
    options: { ...PAGE_OPTIONS },
    input: (v) => page(v),
    call: (c, input) => c.admin.refunds.overpayments.query(input),
  }),
  'overpayment return': command({
    synopsis: 'PAYOUT_ID --note TEXT',
    summary:
      "propose returning a successful payout's set-aside overpayment to the merchant's refund destination (four eyes)",
    options: { note: { type: 'string' } },
    positionals: ['PAYOUT_ID'],
    input: (v, [id]) => ({ payout_id: id!, note: required(v, 'note', 'TEXT') }),
    call: (c, input) => c.admin.refunds.returnOverpayment.mutate(input),
  }),
  'approval list': command({
    synopsis:
      `[--state ${APPROVAL_STATES.join('|')}] [--decided] [--action ${APPROVAL_ACTIONS.join('|')}] ` +
      '[--proposer OPERATOR_ID] [--target ID] [--limit N] [--cursor CURSOR]',
    summary:
      'proposals of money moves, newest first; filters combine (--state PENDING: the decisions ' +
      'waiting; --decided: every other state)',
    options: {
      state: { type: 'string' },
      decided: { type: 'boolean' },
      action: { type: 'string' },
      proposer: { type: 'string' },
      target: { type: 'string' },
      ...PAGE_OPTIONS,
    },
    input: (v) => ({
      state: choice(v, 'state', APPROVAL_STATES),
      decided: v.decided === true || undefined,
      action: choice(v, 'action', APPROVAL_ACTIONS),
      proposer_id: v.proposer as string | undefined,
      target_id: v.target as string | undefined,
      ...page(v),
    }),
    call: (c, input) => c.admin.approvals.list.query(input),
  }),
  'approval show': command({
    synopsis: 'APPROVAL_ID',
    summary: 'one proposal',
    positionals: ['APPROVAL_ID'],
    input: (_v, [id]) => ({ approval_id: id! }),
    call: (c, input) => c.admin.approvals.get.query(input),
  }),
  'approval approve': command({
    synopsis: 'APPROVAL_ID [--note TEXT]',
    summary: "approve another operator's proposal: its money move runs now (approver)",
    options: { note: { type: 'string' } },
    positionals: ['APPROVAL_ID'],
    input: (v, [id]) => ({ approval_id: id!, note: v.note as string | undefined }),
    call: async (c, input) => ({ approval: await c.admin.approvals.approve.mutate(input) }),
  }),
  'approval reject': command({
    synopsis: 'APPROVAL_ID --note TEXT',
    summary: 'reject a proposal, saying why; nothing moves (approver; its proposer withdraws it)',
    options: { note: { type: 'string' } },
    positionals: ['APPROVAL_ID'],
    input: (v, [id]) => ({ approval_id: id!, note: required(v, 'note', 'TEXT') }),
    call: async (c, input) => ({ approval: await c.admin.approvals.reject.mutate(input) }),
  }),
  'recon run': command({
    synopsis: `--date YYYY-MM-DD [--rail ${RECON_RAILS.join('|')}]`,
    summary:
      'reconcile one day (UTC) against the rails now (all three without --rail); running a day again redoes it: {"runs":[...],"busy":[...]}',
    options: { date: { type: 'string' }, rail: { type: 'string' } },
    input: (v) => ({ date: required(v, 'date', 'YYYY-MM-DD'), rail: choice(v, 'rail', RECON_RAILS) }),
    call: (c, input) => c.admin.recon.run.mutate(input),
  }),
  'recon list': command({
    synopsis: `[--rail ${RECON_RAILS.join('|')}] [--limit N] [--cursor CURSOR]`,
    summary: 'reconciliation runs, newest first, with their counts per rail account',
    options: { rail: { type: 'string' }, ...PAGE_OPTIONS },
    input: (v) => ({ rail: choice(v, 'rail', RECON_RAILS), ...page(v) }),
    call: (c, input) => c.admin.recon.runs.query(input),
  }),
  'recon breaks': command({
    synopsis: '[--open] [--limit N] [--cursor CURSOR]',
    summary:
      'differences between the books and the rails, newest first (--open: those waiting for an operator)',
    options: { open: { type: 'boolean' }, ...PAGE_OPTIONS },
    input: (v) => ({ open: v.open === true || undefined, ...page(v) }),
    call: (c, input) => c.admin.recon.breaks.query(input),
  }),
  'recon resolve': command({
    synopsis: 'BREAK_ID --note TEXT',
    summary: 'resolve a break that moves no money, saying why it is explained',
    options: { note: { type: 'string' } },
    positionals: ['BREAK_ID'],
    input: (v, [id]) => ({ break_id: id!, note: required(v, 'note', 'TEXT') }),
    call: (c, input) => c.admin.recon.resolve.mutate(input),
  }),
  'recon propose': command({
    synopsis: 'BREAK_ID --resolution BOOKED_RAIL|REFUNDED_RETURN --note TEXT',
    summary:
      'propose a resolution that moves money (four eyes): book what the rail shows, or refund a returned payout',
    options: { resolution: { type: 'string' }, note: { type: 'string' } },
    positionals: ['BREAK_ID'],
    input: (v, [id]) => ({
      break_id: id!,
      resolution:
        choice(v, 'resolution', ['BOOKED_RAIL', 'REFUNDED_RETURN'] as const) ??
        missing('resolution', 'BOOKED_RAIL|REFUNDED_RETURN'),
      note: required(v, 'note', 'TEXT'),
    }),
    call: (c, input) => c.admin.recon.propose.mutate(input),
  }),
  'audit list': command({
    synopsis:
      '[--operator OPERATOR_ID] [--target ID] [--since ISO_TIME] [--until ISO_TIME] [--limit N] [--cursor CURSOR]',
    summary: 'the audit trail of admin changes, newest first (--since inclusive, --until exclusive)',
    options: {
      operator: { type: 'string' },
      target: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      ...PAGE_OPTIONS,
    },
    input: (v) => ({
      operator_id: v.operator as string | undefined,
      target_id: v.target as string | undefined,
      since: v.since as string | undefined,
      until: v.until as string | undefined,
      ...page(v),
    }),
    call: (c, input) => c.admin.audit.list.query(input),
  }),
  'webhooks dead': command({
    synopsis: '[--tenant TENANT_ID] [--limit N] [--cursor CURSOR]',
    summary: 'webhook deliveries that gave up, newest first',
    options: { tenant: { type: 'string' }, ...PAGE_OPTIONS },
    input: (v) => ({ tenant_id: v.tenant as string | undefined, ...page(v) }),
    call: (c, input) => c.admin.webhooks.dead.query(input),
  }),
  'webhooks redeliver': command({
    synopsis: 'DELIVERY_ID | --tenant TENANT_ID --since ISO_TIME [--until ISO_TIME]',
    summary:
      'send DEAD deliveries again (one, or a tenant\'s created since a time): {"redelivered":[...],"has_more"}',
    options: { tenant: { type: 'string' }, since: { type: 'string' }, until: { type: 'string' } },
    optionalPositionals: ['DELIVERY_ID'],
    input: redeliverInput,
    call: (c, input) => c.admin.webhooks.redeliver.mutate(input),
  }),
  'ledger balances': command({
    synopsis: '[--prefix ACCOUNT_PREFIX]',
    summary: 'where the money is: balances by account and currency (docs/ledger.md)',
    options: { prefix: { type: 'string' } },
    input: (v) => ({ prefix: v.prefix as string | undefined }),
    call: (c, input) => c.admin.ledger.balances.query(input),
  }),
  'ledger payout': command({
    synopsis: 'PAYOUT_ID',
    summary: "a payout's ledger entries, what it holds and how much of it is in transit",
    positionals: ['PAYOUT_ID'],
    input: (_v, [id]) => ({ payout_id: id! }),
    call: (c, input) => c.admin.ledger.payout.query(input),
  }),
  'ledger entries': command({
    synopsis: '--account ACCOUNT [--exact] [--from ISO_TIME] [--to ISO_TIME] [--limit N]',
    summary: 'entries of an account (--exact) or of every account under a prefix, oldest first',
    options: {
      account: { type: 'string' },
      exact: { type: 'boolean' },
      from: { type: 'string' },
      to: { type: 'string' },
      limit: { type: 'string' },
    },
    input: (v) => ({
      account: required(v, 'account', 'ACCOUNT'),
      exact: v.exact === true,
      from: v.from as string | undefined,
      to: v.to as string | undefined,
      ...(v.limit === undefined ? {} : { limit: Number(v.limit) }),
    }),
    call: (c, input) => c.admin.ledger.entries.query(input as never),
  }),
  'ledger check': command({
    synopsis: '[--all]',
    summary: "check the ledger's invariants now (payouts changed in the last hour, every payout with --all)",
    options: { all: { type: 'boolean' } },
    input: (v) => ({ all: v.all === true }),
    call: (c, input) => c.admin.ledger.check.mutate(input),
  }),
  'ledger violations': command({
    synopsis: '',
    summary: 'what the checks found out of balance and is still open (the "Out of balance" queue)',
    call: (c) => c.admin.ledger.violations.query({}),
  }),
};

/** `webhooks redeliver`: a delivery id, or a tenant and a time range, never both. */
function redeliverInput(v: Values, [id]: string[]) {
  if (id !== undefined) {
    if (v.tenant !== undefined || v.since !== undefined || v.until !== undefined)
      throw new UsageError('give DELIVERY_ID or --tenant and --since, not both');
    return { delivery_id: id };
  }
  if (v.tenant === undefined && v.since === undefined)
    throw new UsageError('DELIVERY_ID or --tenant is required');
  const time = (option: string) => {
    const value = v[option];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || Number.isNaN(Date.parse(value)) || !/T.*(Z|[+-]\d\d:?\d\d)$/.test(value))
      throw new UsageError(`--${option} must be an ISO-8601 time with an offset, e.g. 2026-11-26T09:00:00Z`);
    return value;
  };
  return {
    tenant_id: required(v, 'tenant', 'TENANT_ID'),
    since: time('since') ?? missing('since', 'ISO_TIME'),
    until: time('until'),
  };
}

const CALL = 'npm run -s admin --';

function usageOf(words: string): string {
  const command = COMMANDS[words]!;
  return `${CALL} ${words}${command.synopsis ? ` ${command.synopsis}` : ''}`;
}

/** The full usage, or the commands of one noun (`help tenant`). */
export function usage(noun?: string): string {
  const words = Object.keys(COMMANDS).filter((w) => !noun || w.split(' ')[0] === noun);
  const lines = words.flatMap((w) => [
    `  ${w} ${COMMANDS[w]!.synopsis}`.trimEnd(),
    `      ${COMMANDS[w]!.summary}`,
  ]);
  return [
    `usage: ${CALL} <command> [arguments]`,
    '',
    ...lines,
    '',
    'environment:',
    '  SERVICE_URL     the service (default http://HOST:PORT, as npm start: http://127.0.0.1:3000)',
    '  OPERATOR_TOKEN  your operator token; wins over ADMIN_TOKEN',
    "  ADMIN_TOKEN     root's token (default: DATA_DIR/admin-token of a local start, DATA_DIR=./.data)",
  ].join('\n');
}

const HELP_FLAGS = new Set(['--help', '-h']);

/** The commands of a noun (`tenant` has create, approve and list), by their second word. */
function commandsOf(noun: string): string[] {
  return Object.keys(COMMANDS)
    .filter((w) => w.split(' ')[0] === noun && w !== noun)
    .map((w) => w.split(' ')[1]!);
}

/**
 * The help a command line asks for, or null when it names a command to run: `help`, `--help`
 * or nothing (every command); `help NOUN`, `NOUN --help` (that noun's commands); `help NOUN
 * VERB` (that command). A noun alone is a short error listing its commands.
 */
function helpAsked(argv: string[]): HelpText | null {
  const [first, second, third] = argv;
  const asked = first === undefined || first === 'help' || HELP_FLAGS.has(first);
  const noun = asked ? second : first;
  const isNoun = noun !== undefined && commandsOf(noun).length > 0;
  if (asked) {
    if (noun === undefined) return new HelpText(usage());
    if (COMMANDS[noun]) return new HelpText(`usage: ${usageOf(noun)}\n  ${COMMANDS[noun]!.summary}`);
    if (!isNoun) throw new UsageError(`unknown command ${noun}; try: ${CALL} help`);
    const words = `${noun} ${third}`;
    if (third !== undefined && COMMANDS[words])
      return new HelpText(`usage: ${usageOf(words)}\n  ${COMMANDS[words]!.summary}`);
    if (third !== undefined) throw new UsageError(`unknown command ${words}; try: ${CALL} help ${noun}`);
    return new HelpText(usage(noun));
  }
  if (!isNoun || COMMANDS[first!]) return null;
  if (second !== undefined && HELP_FLAGS.has(second)) return new HelpText(usage(first));
  if (second === undefined)
    throw new UsageError(
      `${first} needs a command: ${commandsOf(first!).join(', ')}; try: ${CALL} help ${first}`,
    );
  return null;
}

export interface CliEnv {
  serviceUrl: string;
  token: string;
}

/**
 * Runs one CLI command and returns the object to print (a {@link HelpText} for help). `env` may
 * be a function: it is then read only once the command line is known to be good.
 */
export async function run(argv: string[], env: CliEnv | (() => CliEnv)): Promise<unknown> {
  const help = helpAsked(argv);
  if (help) return help;
  const words = COMMANDS[argv[0]!] ? argv[0]! : argv.slice(0, 2).join(' ');
  const command = COMMANDS[words];
  if (!command) {
    const known = [...new Set(Object.keys(COMMANDS).map((w) => w.split(' ')[0]))];
    const noun = known.includes(argv[0]!) ? `; try: ${CALL} help ${argv[0]}` : `; try: ${CALL} help`;
    throw new UsageError(`unknown command ${argv.slice(0, 2).join(' ')}${noun}`);
  }
  const rest = argv.slice(words.split(' ').length);
  if (rest.some((a) => HELP_FLAGS.has(a)))
    return new HelpText(`usage: ${usageOf(words)}\n  ${command.summary}`);
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: rest, allowPositionals: true, strict: true, options: command.options ?? {} });
  } catch (err) {
    // node:util's messages carry advice for programs ("To specify a positional argument ..."): keep the first sentence.
    throw new UsageError((err as Error).message.split('. ')[0]!.replace(/\.$/, ''), usageOf(words));
  }
  const wanted = command.positionals ?? [];
  const most = wanted.length + (command.optionalPositionals?.length ?? 0);
  if (parsed.positionals.length < wanted.length || parsed.positionals.length > most) {
    const message =
      parsed.positionals.length < wanted.length
        ? `${wanted[parsed.positionals.length]} is required`
        : `unexpected argument ${parsed.positionals[most]}`;
    throw new UsageError(message, usageOf(words));
  }
  let input: unknown;
  try {
    input = command.input?.(parsed.values, parsed.positionals);
  } catch (err) {
    if (err instanceof UsageError && !err.usage) throw new UsageError(err.message, usageOf(words));
    throw err;
  }
  const { serviceUrl, token } = typeof env === 'function' ? env() : env;
  const client = createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url: `${serviceUrl.replace(/\/$/, '')}/trpc`,
        headers: { authorization: `Bearer ${token}` },
      }),
    ],
  });
  return command.call(client, input);
}

/**
 * Where the service is and who the caller is, from the environment: SERVICE_URL, else the
 * address `npm start` listens on (HOST and PORT, read as the service reads them); OPERATOR_TOKEN,
 * else ADMIN_TOKEN, else the admin token a local start kept in DATA_DIR.
 */
export function cliEnv(env: Record<string, string | undefined> = process.env): CliEnv {
  const present = Object.fromEntries(
    ['PORT', 'HOST', 'DATA_DIR'].filter((k) => env[k]).map((k) => [k, env[k]]),
  );
  const parsed = configSchema.pick({ PORT: true, HOST: true, DATA_DIR: true }).safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(`${issue.path.join('.')}: ${issue.message}`);
  }
  const { PORT, HOST, DATA_DIR } = parsed.data;
  // A service listening on every interface is reached on the loopback one.
  const host = HOST === '0.0.0.0' || HOST === '::' ? '127.0.0.1' : HOST;
  const serviceUrl = env.SERVICE_URL || `http://${host.includes(':') ? `[${host}]` : host}:${PORT}`;
  let token = env.OPERATOR_TOKEN || env.ADMIN_TOKEN;
  if (!token) {
    const file = path.join(DATA_DIR, 'admin-token');
    if (!existsSync(file)) {
      throw new UsageError(
        `no token: set OPERATOR_TOKEN (or ADMIN_TOKEN); no admin-token file in DATA_DIR (${path.resolve(DATA_DIR)})`,
      );
    }
    token = readFileSync(file, 'utf8').trim();
  }
  return { serviceUrl, token };
}

/** The error a failed command prints, and its exit code. */
export function reportOf(err: unknown, serviceUrl: string): { exit: number; error: Record<string, unknown> } {
  if (err instanceof UsageError) {
    return {
      exit: 2,
      error: { code: 'USAGE', message: err.message, ...(err.usage ? { usage: err.usage } : {}) },
    };
  }
  if (err instanceof TRPCClientError) {
    const data = err.data as { app_code?: string; details?: unknown } | undefined;
    if (data?.app_code) {
      return { exit: 1, error: { code: data.app_code, message: err.message, details: data.details ?? [] } };
    }
    // No answer from the service at all: say where the CLI looked, and how to point it elsewhere.
    const cause = (err.cause as { cause?: { code?: string; message?: string } } | undefined)?.cause;
    const why = cause?.code ?? cause?.message ?? err.message;
    return {
      exit: 1,
      error: {
        code: 'SERVICE_UNREACHABLE',
        message: `could not reach the service at ${serviceUrl} (${why}); is it running? SERVICE_URL or PORT says where it is`,
      },
    };
  }
  return { exit: 1, error: { code: 'ERROR', message: (err as Error).message } };
}

if (import.meta.main) {
  let serviceUrl = '';
  try {
    const result = await run(process.argv.slice(2), () => {
      const env = cliEnv();
      serviceUrl = env.serviceUrl;
      return env;
    });
    process.stdout.write(result instanceof HelpText ? `${result.text}\n` : `${JSON.stringify(result)}\n`);
  } catch (err) {
    const { exit, error } = reportOf(err, serviceUrl);
    process.stderr.write(`${JSON.stringify({ error })}\n`);
    process.exit(exit);
  }
}
