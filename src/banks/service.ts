import { checkAccount, type DestinationType, type Institution } from '#src/corridors/corridors.ts';
import type { Deps } from '#src/deps.ts';
import { AppError } from '#src/http/errors.ts';

/** Institutions of a corridor for one destination type; 422 when the corridor does not exist. */
export async function listInstitutions(
  deps: Deps,
  query: { country: string; currency: string; destinationType: DestinationType },
): Promise<Institution[]> {
  const corridor = deps.corridors.find(query.country, query.currency);
  if (
    !corridor ||
    corridor.country !== query.country ||
    !corridor.destination_types.includes(query.destinationType)
  ) {
    throw new AppError('CORRIDOR_NOT_SUPPORTED', {
      message: `No ${query.destinationType} payouts in ${query.currency} to ${query.country}.`,
      details: [
        {
          field: 'country',
          issue: `${query.country}/${query.currency}/${query.destinationType} is not a supported corridor`,
        },
      ],
    });
  }
  return deps.providers.directory.listInstitutions(query);
}

/** The institution with `providerCode` in the corridor of `currency`, or a 422 naming the field. */
export async function requireInstitution(
  deps: Deps,
  args: {
    country: string;
    currency: string;
    destinationType: DestinationType;
    providerCode: string;
    field: string;
  },
): Promise<Institution> {
  // A corridor's institutions are cached a minute: the create's common case waits for nothing.
  const institutions =
    deps.providers.directory.knownInstitutions?.(args) ?? (await listInstitutions(deps, args));
  const found = institutions.find((i) => i.provider_code === args.providerCode);
  if (!found) {
    throw new AppError('PROVIDER_CODE_UNKNOWN', {
      details: [
        {
          field: args.field,
          issue: `is not a ${args.destinationType} institution of ${args.country}/${args.currency}`,
        },
      ],
    });
  }
  return found;
}

/**
 * Name enquiry: the institution-confirmed account name. The account is checked against the
 * corridor's format first (nobody is asked about an impossible number, and the same rule holds
 * as on a payout); an unknown account is ACCOUNT_NOT_FOUND.
 */
export async function resolveAccount(
  deps: Deps,
  args: {
    destinationType: 'BANK_ACCOUNT' | 'MOBILE_MONEY';
    currency: string;
    accountNumber: string;
    providerCode: string;
    fields: { account: string; provider: string; currency: string };
  },
): Promise<{ accountName: string; accountNumber: string; institution: Institution }> {
  const corridor = deps.corridors.byCurrency(args.currency);
  if (!corridor || corridor.country === '*') {
    throw new AppError('CORRIDOR_NOT_SUPPORTED', {
      details: [
        { field: args.fields.currency, issue: `${args.currency} has no bank or mobile-money corridor` },
      ],
    });
  }
  const format = deps.corridors.accountFormat(corridor, args.destinationType, null);
  // Checked, asked, cached and answered in one form: a mobile number in E.164, however written.
  const { account: accountNumber, issue } = format
    ? checkAccount(format, args.accountNumber)
    : { account: args.accountNumber, issue: null };
  if (issue)
    throw new AppError('VALIDATION_FAILED', {
      details: [{ field: args.fields.account, issue }],
    });
  const institution = await requireInstitution(deps, {
    country: corridor.country,
    currency: args.currency,
    destinationType: args.destinationType,
    providerCode: args.providerCode,
    field: args.fields.provider,
  });
  const result = await deps.providers.directory.nameEnquiry({
    destinationType: args.destinationType,
    currency: args.currency,
    accountNumber,
    providerCode: args.providerCode,
  });
  if (!result) {
    throw new AppError('ACCOUNT_NOT_FOUND', {
      details: [{ field: args.fields.account, issue: 'no such account at this institution' }],
    });
  }
  return { accountName: result.accountName, accountNumber, institution };
}
