import { Writable } from 'node:stream';
import { expect } from 'chai';
import { createLogger, flatLogger, REDACT_PATHS } from '#src/lib/log.ts';

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

  it('of flat fields (the access line) still blank every field named like a secret', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const flat = flatLogger(createLogger({ level: 'info', destination: sink }));
    // Every top-level name the full logger redacts, as a field of a flat line.
    const secretNames = REDACT_PATHS.filter((p) => !p.includes('.') && !p.includes('['));
    expect(secretNames).to.include.members([
      'api_key',
      'secret',
      'account_number',
      'destination_account_unique',
    ]);
    flat.info(
      { request_id: 'req_1', status: 201, ...Object.fromEntries(secretNames.map((n) => [n, `leak_${n}`])) },
      'request',
    );
    const line = JSON.parse(lines.join('')) as Record<string, unknown>;
    expect(line).to.include({ request_id: 'req_1', status: 201, msg: 'request' });
    for (const name of secretNames) expect(line[name], name).to.equal('[redacted]');
  });
});
