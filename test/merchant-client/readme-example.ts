/**
 * The README's example of the client (the block between the markers, with the README's import
 * path), here so that `npm run typecheck` checks it; a test keeps the two identical. Never run.
 */
import type { IncomingMessage } from 'node:http';

declare const rawBody: Buffer;
declare const req: IncomingMessage;
declare function markPaid(payoutId: string): void;

// README begins
import { PayoutApiError, PayoutClient, verifyWebhook } from '#src/client/index.ts';

const api = new PayoutClient({ baseUrl: 'http://127.0.0.1:3000', apiKey: process.env.API_KEY! });
await api.setRefundDestination({ currency: 'USDT', type: 'CRYPTO_ADDRESS', network: 'TRON', address: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy' });
await api.createPayout({ destination_type: 'MOBILE_MONEY', destination_country: 'KE', destination_currency: 'KES', destination_amount: 2500,
  destination_account_unique: '+254712300502', destination_provider_name: 'M-Pesa', destination_provider_code: 'MPESA', destination_account_name: 'WANJIKU KAMAU' });
for await (const p of api.paginate('listPayouts', { status: 'PENDING_PAYMENT' })) console.log(p.id, p.payment_instruction?.expected_amount);
await api.getPayout('no-such-id').catch((e) => e instanceof PayoutApiError && e.is('PAYOUT_NOT_FOUND')); // typed codes
// In your webhook endpoint, with the body exactly as received:
const result = verifyWebhook({ rawBody, headers: req.headers, secret: process.env.WEBHOOK_SECRET! });
if (result.ok && result.event.event_type === 'payout.successful') markPaid(result.event.data.id);
// README ends
