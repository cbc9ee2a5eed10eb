import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from './config.ts';
import type { Corridors } from './corridors/corridors.ts';
import type { RateLimiter } from './http/rate-limit.ts';
import type { Clock } from './lib/clock.ts';
import type { Logger } from './lib/log.ts';
import type { Providers } from './providers/providers.ts';

/** Keys the service derives or loads at start; none of them ever leaves the process. */
export interface Secrets {
  /** AES-256-GCM key for secrets at rest (webhook signing secrets). */
  encryptionKey: Buffer;
  /** HMAC key that makes pagination cursors tamper-evident. */
  cursorKey: Buffer;
  /** Bearer token of the admin procedures. */
  adminToken: string;
}

/** Everything a request or a job needs, built once by the composition root (`src/service.ts`). */
export interface Deps {
  config: Config;
  orm: MikroORM;
  clock: Clock;
  log: Logger;
  secrets: Secrets;
  corridors: Corridors;
  providers: Providers;
  rateLimiter: RateLimiter;
}
