/**
 * Every merchant scope. The first seven are the contract's; the rest gate the endpoints the
 * contract leaves open (documented in docs/authentication.md).
 */
export const MERCHANT_SCOPES = [
  'payouts:write',
  'payouts:read',
  'refunds:manage',
  'refunds:read',
  'rates:read',
  'identity:enquiry',
  'webhooks:manage',
  'banks:read',
  'inflows:read',
  'webhooks:read',
] as const;

export type Scope = (typeof MERCHANT_SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (MERCHANT_SCOPES as readonly string[]).includes(value);
}
