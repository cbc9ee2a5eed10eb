/**
 * Operators' roles, each able to do everything the one before it can (issue 18):
 *
 * - `viewer`: every read of `admin.*`;
 * - `operator`: propose money moves, redeliver webhooks, manage tenants and keys;
 * - `approver`: approve or reject another operator's proposals;
 * - `admin`: manage operators.
 */
export const ROLES = ['viewer', 'operator', 'approver', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

/** Whether someone with the role `held` may do what needs `wanted`. */
export function hasRole(held: Role, wanted: Role): boolean {
  return ROLES.indexOf(held) >= ROLES.indexOf(wanted);
}

/**
 * The role a procedure under `admin.*` needs: the one its meta declares, otherwise `viewer` for
 * a read and `admin` for a change (a procedure that forgot to say is closed, not open).
 */
export function requiredRole(meta: { role?: Role } | undefined, type: string): Role {
  return meta?.role ?? (type === 'query' ? 'viewer' : 'admin');
}
