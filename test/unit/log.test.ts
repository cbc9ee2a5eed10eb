import { Writable } from 'node:stream';
import { expect } from 'chai';
import { createLogger } from '#src/lib/log.ts';

describe('logs', () => {
  it('never contain keys, secrets or full account numbers', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = createLogger({ level: 'info', destination: sink });
    log.info(
      {
        api_key: 'sk_live_secret_value',
        headers: { 'x-api-key': 'sk_header_value', authorization: 'Bearer adm_token_value' },
        body: {
          account_number: '0123456789',
          destination_account_unique: '+254700000001',
          address: 'TXyzAddressValue1234567890',
        },
        secret: 'whsec_value',
      },
      'something happened',
    );
    const out = lines.join('');
    for (const leaked of [
      'sk_live_secret_value',
      'sk_header_value',
      'adm_token_value',
      '0123456789',
      '+254700000001',
      'TXyzAddressValue1234567890',
      'whsec_value',
    ]) {
      expect(out).to.not.include(leaked);
    }
    expect(out).to.include('[redacted]');
  });
});
