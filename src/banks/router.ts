import { z } from 'zod';
import { merchantProcedure } from '#src/http/procedures.ts';
import { router } from '#src/http/trpc.ts';
import { countryCode, currencyCode, institutionOut, nameEnquiryOut, payableType } from './schemas.ts';
import { listInstitutions, resolveAccount } from './service.ts';

export const banksRouter = router({
  list: merchantProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/banks',
        tags: ['Banks'],
        summary: 'List institutions of a corridor',
      },
      scope: 'banks:read',
    })
    .input(
      z.strictObject({
        country: countryCode,
        currency: currencyCode.optional().describe("Defaults to the corridor's currency for the country."),
        destination_type: payableType,
      }),
    )
    .output(z.array(institutionOut))
    .query(async ({ ctx, input }) => {
      const currency =
        input.currency ??
        ctx.deps.corridors.data.corridors.find((c) => c.country === input.country)?.currency ??
        '';
      const institutions = await listInstitutions(ctx.deps, {
        country: input.country,
        currency,
        destinationType: input.destination_type,
      });
      return institutions.map((i) => ({
        provider_name: i.provider_name,
        provider_code: i.provider_code,
        destination_type: i.destination_type,
      }));
    }),

  resolve: merchantProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/banks/resolve',
        tags: ['Banks'],
        summary: 'Name enquiry',
        description:
          'Returns the institution-confirmed account name. Writes nothing; needs no Idempotency-Key.',
      },
      scope: 'identity:enquiry',
    })
    .input(
      z.strictObject({
        destination_type: payableType,
        destination_currency: currencyCode,
        destination_account_unique: z.string().trim().min(1).max(34),
        destination_provider_code: z.string().trim().min(1).max(32),
      }),
    )
    .output(nameEnquiryOut)
    .mutation(async ({ ctx, input }) => {
      const { accountName } = await resolveAccount(ctx.deps, {
        destinationType: input.destination_type,
        currency: input.destination_currency,
        accountNumber: input.destination_account_unique,
        providerCode: input.destination_provider_code,
        fields: {
          account: 'destination_account_unique',
          provider: 'destination_provider_code',
          currency: 'destination_currency',
        },
      });
      return {
        destination_account_name: accountName,
        destination_account_unique: input.destination_account_unique,
        destination_provider_code: input.destination_provider_code,
        destination_type: input.destination_type,
      };
    }),
});
