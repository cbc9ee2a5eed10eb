/**
 * The money moves that need a second operator, named as the CLI names them. A module of its own,
 * without the ORM, so that the console's bundle takes the same list as the server.
 */
export const MONEY_MOVES = [
  'inflow.attribute',
  'inflow.return',
  'payout.fail',
  'refund.retry',
  'refund.raise',
  'overpayment.return',
  'recon.resolve',
  'payee.accept',
] as const;
export type MoneyMove = (typeof MONEY_MOVES)[number];
