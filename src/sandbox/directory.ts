import Router from '@koa/router';
import { z } from 'zod';
import { type Corridors, DESTINATION_TYPES } from '#src/corridors/corridors.ts';
import { readJson, SandboxError, validate } from './http.ts';
import { accountHolderName } from './names.ts';

/** Account numbers ending like this have no account behind them (product decisions §6). */
const NO_SUCH_ACCOUNT_SUFFIX = '0000';

const institutionsQuery = z.object({
  country: z.string().regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 code'),
  currency: z.string().regex(/^[A-Z]{3,5}$/, 'must be a currency code'),
  destination_type: z.enum(DESTINATION_TYPES),
});

const nameEnquiryBody = z.object({
  destination_type: z.enum(DESTINATION_TYPES),
  currency: z.string().regex(/^[A-Z]{3,5}$/, 'must be a currency code'),
  account_number: z.string().regex(/^\+?[0-9A-Za-z]{4,34}$/, 'must be 4 to 34 letters or digits'),
  provider_code: z.string().min(1).max(32),
});

/**
 * The bank and mobile-money directory with name enquiry, as an upstream switch serves them.
 * Everything comes from the corridors configuration; nothing is stored.
 */
export function directoryRouter(options: { corridors: Corridors }): Router {
  const { corridors } = options;
  const router = new Router({ prefix: '/directory' });

  router.get('/institutions', (ctx) => {
    const query = validate(institutionsQuery, ctx.query);
    const corridor = corridors.find(query.country, query.currency);
    const data = (corridor?.institutions ?? [])
      .filter((i) => i.destination_type === query.destination_type)
      .map((i) => ({
        provider_code: i.provider_code,
        provider_name: i.provider_name,
        destination_type: i.destination_type,
      }));
    ctx.body = { data };
  });

  router.post('/name-enquiry', async (ctx) => {
    const body = validate(nameEnquiryBody, await readJson(ctx));
    // A code is only meaningful within its currency's switch and for its own kind of institution:
    // a bank code sent as MOBILE_MONEY is as unknown to the directory as a made-up one.
    const corridor = corridors.data.corridors.find(
      (c) =>
        c.currency === body.currency &&
        c.institutions.some(
          (i) => i.provider_code === body.provider_code && i.destination_type === body.destination_type,
        ),
    );
    if (!corridor) {
      throw new SandboxError(
        'INSTITUTION_NOT_FOUND',
        `No ${body.destination_type} institution ${body.provider_code} for ${body.currency}.`,
      );
    }
    if (body.account_number.endsWith(NO_SUCH_ACCOUNT_SUFFIX)) {
      throw new SandboxError('ACCOUNT_NOT_FOUND', 'The institution has no account with that number.');
    }
    ctx.body = {
      account_name: accountHolderName(corridor.country, body.provider_code, body.account_number),
      provider_code: body.provider_code,
      account_number: body.account_number,
    };
  });

  return router;
}
