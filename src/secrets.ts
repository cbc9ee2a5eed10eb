import { hkdfSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from './config.ts';
import type { Secrets } from './deps.ts';
import { randomToken } from './lib/crypto.ts';

/**
 * Secrets from the environment, or generated once into DATA_DIR (mode 0600) and reused on the
 * next start: a fresh clone runs without configuration, a deployment sets ADMIN_TOKEN and
 * ENCRYPTION_KEY explicitly.
 */
export function loadSecrets(config: Config): Secrets {
  const encryptionKey = config.ENCRYPTION_KEY
    ? Buffer.from(config.ENCRYPTION_KEY, 'base64')
    : Buffer.from(
        kept(config.DATA_DIR, 'encryption.key', () => randomBytes(32).toString('base64')),
        'base64',
      );
  const adminToken =
    config.ADMIN_TOKEN ?? kept(config.DATA_DIR, 'admin-token', () => `adm_${randomToken(32)}`);
  const callbackSecret =
    config.PROVIDER_CALLBACK_SECRET ??
    kept(config.DATA_DIR, 'provider-callback.secret', () => randomToken(32));
  return secretsFrom({ encryptionKey, adminToken, callbackSecret });
}

/** The full set of secrets from the three that are configured; the others derive from the encryption key. */
export function secretsFrom(base: {
  encryptionKey: Buffer;
  adminToken: string;
  callbackSecret: string;
}): Secrets {
  return {
    ...base,
    cursorKey: deriveKey(base.encryptionKey, 'pagination-cursor'),
    idempotencyKey: deriveKey(base.encryptionKey, 'idempotency-response'),
  };
}

/** A sub-key for one purpose, so that one leaked derived key reveals nothing about the others. */
export function deriveKey(master: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), purpose, 32));
}

function kept(dir: string, name: string, make: () => string): string {
  const file = path.join(dir, name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dir, { recursive: true });
  const value = make();
  writeFileSync(file, `${value}\n`, { mode: 0o600 });
  return value;
}
