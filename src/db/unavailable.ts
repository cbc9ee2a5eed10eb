import { ConnectionException } from '@mikro-orm/core';

/**
 * SQLSTATEs and socket errors that mean the database connection is gone or refused, not that the
 * statement was wrong: class 08 (connection exception), 57P01–57P03 (the server terminated the
 * backend, is shutting down, or cannot take connections yet), 53300 (too many connections).
 */
const GONE_STATES = /^(08...|57P0[123]|53300)$/;
const GONE_SOCKET = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTCONN']);
/** What node-postgres says when a connection ends under a query, or none can be had in time. */
const GONE_MESSAGE =
  /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Connection ended)/;

/**
 * True when `error` (or anything in its `cause` chain) says the database could not be reached or
 * dropped the connection: a moment's outage, answered 503 with Retry-After, never a 500. A FATAL
 * error ends the session, whatever its state: the database dropped or renamed (3D000), the role's
 * login refused (28000, 28P01).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 8; depth++) {
    if (e instanceof ConnectionException) return true;
    const { code, sqlState, message, severity } = e as {
      code?: unknown;
      sqlState?: unknown;
      message?: unknown;
      severity?: unknown;
    };
    if (severity === 'FATAL' || severity === 'PANIC') return true;
    for (const state of [code, sqlState]) {
      if (typeof state === 'string' && (GONE_STATES.test(state) || GONE_SOCKET.has(state))) return true;
    }
    if (typeof message === 'string' && GONE_MESSAGE.test(message)) return true;
    e = (e as { cause?: unknown; previous?: unknown }).cause ?? (e as { previous?: unknown }).previous;
  }
  return false;
}
