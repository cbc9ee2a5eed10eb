import { z } from 'zod';
import { merchantProcedure } from '#src/http/procedures.ts';
import { router } from '#src/http/trpc.ts';
import {
  countryCode,
  currencyCode,
  institutionOut,
  nameEnquiryIn,
  nameEnquiryOut,
  payableType,
} from './schemas.ts';
import { listInstitutions, resolveAccount } from './service.ts';

export const banksRouter = router({
  list: merchantProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/banks',
        operationId: 'listBanks',
        tags: ['Banks'],
        summary: 'List institutions of a corridor',
        description:
          'Every bank or every mobile money provider (never both in one answer) able to receive payouts in the ' +
          'country and currency. Read provider_code from here: codes come from an upstream directory and can change.',
      },
      scope: 'banks:read',
      errors: ['CORRIDOR_NOT_SUPPORTED', 'UPSTREAM_UNAVAILABLE'],
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
        operationId: 'resolveAccount',
        tags: ['Banks'],
        summary: 'Name enquiry',
        description:
          'Returns the institution-confirmed account name. Writes nothing; needs no Idempotency-Key.',
      },
      scope: 'identity:enquiry',
      errors: [
        'CORRIDOR_NOT_SUPPORTED',
        'PROVIDER_CODE_UNKNOWN',
        'ACCOUNT_NOT_FOUND',
        'UPSTREAM_UNAVAILABLE',
      ],
    })
    .input(nameEnquiryIn)
    .output(nameEnquiryOut)
    .mutation(async ({ ctx, input }) => {
      const { accountName, accountNumber } = await resolveAccount(ctx.deps, {
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
        destination_account_unique: accountNumber,
        destination_provider_code: input.destination_provider_code,
        destination_type: input.destination_type,
      };
    }),
});
