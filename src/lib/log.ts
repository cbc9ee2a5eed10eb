import { type Logger, pino } from 'pino';

export type { Logger };

/**
 * Paths pino blanks out wherever they appear in a log line: credentials, secrets and full
 * account numbers never reach a log.
 */
export const REDACT_PATHS = [
  'api_key',
  'apiKey',
  'secret',
  'webhook_secret',
  'signing_secret',
  'admin_token',
  'account_number',
  'accountNumber',
  'destination_account_unique',
  'address',
  'to_address',
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'headers["x-api-key"]',
  'headers.authorization',
  '*.api_key',
  '*.apiKey',
  '*.secret',
  '*.webhook_secret',
  '*.account_number',
  '*.accountNumber',
  '*.destination_account_unique',
  '*.address',
  '*.to_address',
  '*.headers["x-api-key"]',
  '*.headers.authorization',
];

export function createLogger(options: {
  level: string;
  name?: string;
  destination?: pino.DestinationStream;
}): Logger {
  return pino(
    {
      level: options.level,
      name: options.name ?? 'payout-service',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination,
  );
}
