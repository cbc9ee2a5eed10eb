import type { ErrorsOf, PayoutClient } from '#src/client/index.ts';

/**
 * Compile-time checks of the client's generated types: `npm run typecheck` fails when one of these
 * calls stops being refused (or a valid one starts being refused). Never run.
 */
export function typeChecks(api: PayoutClient): void {
  void api.createPayout({
    destination_type: 'CRYPTO_WALLET',
    destination_country: 'AE',
    destination_currency: 'USDT',
    destination_amount: 10,
    destination_account_unique: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
    destination_provider_name: 'TRON',
    // @ts-expect-error a crypto wallet takes no provider code
    destination_provider_code: 'X',
  });
  // @ts-expect-error currencies are a closed set
  void api.createQuote({ settlement_currency: 'EUR', destination_currency: 'NGN', destination_amount: 1 });
  // @ts-expect-error the payout id is a string
  void api.getPayout(42);
  const notFound: ErrorsOf<'getPayout'> = 'PAYOUT_NOT_FOUND';
  // @ts-expect-error reading a payout never answers QUOTE_EXPIRED
  const impossible: ErrorsOf<'getPayout'> = 'QUOTE_EXPIRED';
  void [notFound, impossible];
}
