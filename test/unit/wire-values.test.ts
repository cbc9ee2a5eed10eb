import { expect } from 'chai';
import { isoTimestamp, toDate } from '#src/db/sql.ts';
import { newId } from '#src/lib/ids.ts';
import { moneyJson } from '#src/lib/money.ts';

/** How values read from PostgreSQL become the API's wire form, and how ids are made. */
describe('wire values', () => {
  it('writes timestamps as PostgreSQL returns them exactly as Date#toISOString would', () => {
    const read = [
      '2026-11-24 09:00:00.123+00',
      '2026-11-24 09:00:00+00',
      '2026-11-24 09:00:00.12+00',
      '2026-11-24T09:00:00.123456+00:00',
      '2026-11-24 09:00:00.999999+00',
      '2026-11-24 09:00:00.1+05:30',
      '2026-11-23 22:00:00-11',
    ];
    for (const value of read) expect(isoTimestamp(value), value).to.equal(toDate(value).toISOString());
    expect(isoTimestamp('2026-11-24 09:00:00.1+05:30')).to.equal('2026-11-24T03:30:00.100Z');
    expect(() => toDate('yesterday')).to.throw(/not a timestamp/);
  });

  it('writes amounts with the stored digits, without trailing zeros, never through a float', () => {
    const json = (value: string) => JSON.stringify({ a: moneyJson(value) });
    expect(json('150000')).to.equal('{"a":150000}');
    expect(json('1500.50')).to.equal('{"a":1500.5}');
    expect(json('0.000001')).to.equal('{"a":0.000001}');
    expect(json('12345678901234.123456')).to.equal('{"a":12345678901234.123456}');
    expect(json('007')).to.equal('{"a":7}');
  });

  it('makes ids that increase even within one millisecond', () => {
    const ids = Array.from({ length: 5000 }, () => newId());
    for (let i = 1; i < ids.length; i++)
      expect(ids[i]! > ids[i - 1]!, `${ids[i - 1]} < ${ids[i]}`).to.equal(true);
    expect(new Set(ids).size).to.equal(ids.length);
    expect(ids[0]).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
