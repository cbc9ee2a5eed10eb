import { approvalsAdminRouter } from './approvals/admin.router.ts';
import { auditAdminRouter } from './audit/admin.router.ts';
import { banksRouter } from './banks/router.ts';
import { complianceAdminRouter } from './compliance/admin.router.ts';
import { outflowsRouter } from './dispatch/router.ts';
import { router, settleOutputChecks } from './http/trpc.ts';
import { ledgerAdminRouter } from './ledger/admin.router.ts';
import { moneyMovementsRouter } from './money-movements/router.ts';
import { operatorAdminRouter } from './operators/admin.router.ts';
import { payeeAdminRouter } from './payees/admin.router.ts';
import { payoutAdminRouter } from './payouts/admin.router.ts';
import { payoutsRouter } from './payouts/router.ts';
import { ratesRouter } from './rates/router.ts';
import { reconAdminRouter } from './reconciliation/admin.router.ts';
import { refundDestinationsRouter } from './refund-destinations/router.ts';
import { refundAdminRouter } from './refunds/admin.router.ts';
import { refundsRouter } from './refunds/router.ts';
import { settlementAdminRouter } from './settlement/admin.router.ts';
import { inflowsRouter } from './settlement/router.ts';
import { tenantAdminRouter } from './tenants/admin.router.ts';
import { webhooksAdminRouter } from './webhooks/admin.router.ts';
import { webhooksRouter } from './webhooks/router.ts';

/**
 * The one router of the service. Merchant procedures carry `meta.openapi` and are served as the
 * REST API under /v1; everything (including `admin.*`) is also served over tRPC at /trpc. The hot
 * paths' output checks are settled for the environment (see `settleOutputChecks`).
 */
export const appRouter = settleOutputChecks(
  router({
    payouts: payoutsRouter,
    outflows: outflowsRouter,
    inflows: inflowsRouter,
    refunds: refundsRouter,
    banks: banksRouter,
    rates: ratesRouter,
    refundDestinations: refundDestinationsRouter,
    webhooks: webhooksRouter,
    moneyMovements: moneyMovementsRouter,
    admin: router({
      ...operatorAdminRouter._def.record,
      ...payoutAdminRouter._def.record,
      ...tenantAdminRouter._def.record,
      ...refundAdminRouter._def.record,
      ...webhooksAdminRouter._def.record,
      ...auditAdminRouter._def.record,
      ...complianceAdminRouter._def.record,
      ...approvalsAdminRouter._def.record,
      ...payeeAdminRouter._def.record,
      settlement: settlementAdminRouter,
      recon: reconAdminRouter,
      ledger: ledgerAdminRouter,
    }),
  }),
);

export type AppRouter = typeof appRouter;
