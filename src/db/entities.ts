import type { Options } from '@mikro-orm/postgresql';
import { Approval } from '#src/approvals/entities.ts';
import { ApprovalRule } from '#src/approvals/rules.ts';
import { AuditEntry } from '#src/audit/entities.ts';
import { OverdueNotice } from '#src/compliance/entities.ts';
import { Outflow } from '#src/dispatch/entities.ts';
import { OutboxEvent } from '#src/events/entities.ts';
import { IdempotencyRecord } from '#src/idempotency/entities.ts';
import { DepositAddress, PaymentInstruction } from '#src/instructions/entities.ts';
import { Task } from '#src/jobs/entities.ts';
import { LedgerBalance, LedgerBalanceDelta, LedgerEntry } from '#src/ledger/entities.ts';
import { LedgerViolation } from '#src/ledger/violations.ts';
import { Operator } from '#src/operators/entities.ts';
import { Payout, StatusLog } from '#src/payouts/entities.ts';
import { Quote } from '#src/quotes/entities.ts';
import {
  ReconAccount,
  ReconBreak,
  ReconProcessorLine,
  ReconRailLine,
  ReconRailTotal,
  ReconRun,
} from '#src/reconciliation/entities.ts';
import { RefundDestination } from '#src/refund-destinations/entities.ts';
import { Refund } from '#src/refunds/entities.ts';
import { Inflow, RailCursor } from '#src/settlement/entities.ts';
import { ApiKey, Tenant } from '#src/tenants/entities.ts';
import {
  WebhookDelivery,
  WebhookDeliveryAttempt,
  WebhookOriginInFlight,
} from '#src/webhooks/delivery.entities.ts';
import { WebhookConfig } from '#src/webhooks/entities.ts';

/**
 * Every entity of the service; the ORM and the migration generator read this list. Typed as the
 * ORM's option takes it: the inferred tuple of every entity's schema is too long for declaration
 * emit (TS7056), which the router's types package needs.
 */
export const entities: NonNullable<Options['entities']> = [
  Tenant,
  ApiKey,
  IdempotencyRecord,
  Quote,
  RefundDestination,
  WebhookConfig,
  Payout,
  StatusLog,
  PaymentInstruction,
  DepositAddress,
  Inflow,
  RailCursor,
  Outflow,
  Refund,
  OutboxEvent,
  WebhookDelivery,
  WebhookDeliveryAttempt,
  WebhookOriginInFlight,
  Task,
  Operator,
  AuditEntry,
  Approval,
  ApprovalRule,
  OverdueNotice,
  LedgerEntry,
  LedgerBalance,
  LedgerBalanceDelta,
  ReconRun,
  ReconAccount,
  ReconBreak,
  ReconRailLine,
  ReconRailTotal,
  ReconProcessorLine,
  LedgerViolation,
];
