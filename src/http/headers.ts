import type { ErrorCode } from './errors.ts';

/**
 * The headers the merchant API sets on its responses, in one place: the REST adapter sets them,
 * and the OpenAPI document declares them from this list.
 */
export interface ResponseHeader {
  description: string;
  schema: {
    type: 'string' | 'integer';
    example?: string | number;
    enum?: readonly string[];
    pattern?: string;
    minimum?: number;
  };
  /**
   * Which responses carry it: `all` every response of an operation; `authenticated` every response
   * once the API key is known (success or error); `retry` the errors of `RETRY_AFTER_CODES`;
   * `replayed` a write answered from its Idempotency-Key.
   */
  on: 'all' | 'authenticated' | 'retry' | 'replayed';
}

/**
 * The errors that tell the client when to try again (`Retry-After`): the rate limit's 429, and the
 * 503 of a database connection lost under the request.
 */
export const RETRY_AFTER_CODES: readonly ErrorCode[] = ['RATE_LIMITED', 'SERVICE_UNAVAILABLE'];

export const RESPONSE_HEADERS = {
  'X-Request-Id': {
    description:
      'The request id: the caller’s X-Request-Id when it was sane, else generated. Quoted in every error.',
    schema: {
      type: 'string',
      pattern: '^[A-Za-z0-9._:-]{1,128}$',
      example: 'req_019a7f3c2b1e7d4a9c5e8f0a1b2c3d4e',
    },
    on: 'all',
  },
  'RateLimit-Policy': {
    description:
      'The rate-limit policy (draft-ietf-httpapi-ratelimit-headers): a bucket of q requests per API key, ' +
      'refilled in w seconds.',
    schema: { type: 'string', pattern: '^"api-key";q=\\d+;w=\\d+$', example: '"api-key";q=100;w=2' },
    on: 'all',
  },
  RateLimit: {
    description:
      'What is left of this API key’s bucket (draft-ietf-httpapi-ratelimit-headers): r requests, full again in t seconds.',
    schema: { type: 'string', pattern: '^"api-key";r=\\d+;t=\\d+$', example: '"api-key";r=99;t=1' },
    on: 'authenticated',
  },
  'Retry-After': {
    description:
      'Seconds to wait before trying again: until the rate limit allows the next request (429), or ' +
      'before retrying a request the service could not serve without its database (503; a write with ' +
      'the same Idempotency-Key).',
    schema: { type: 'integer', minimum: 1, example: 1 },
    on: 'retry',
  },
  'Idempotent-Replayed': {
    description:
      'Present when the response is the stored response of an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', enum: ['true'] },
    on: 'replayed',
  },
} as const satisfies Record<string, ResponseHeader>;

export type ResponseHeaderName = keyof typeof RESPONSE_HEADERS;
