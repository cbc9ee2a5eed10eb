import { type Platform, Type } from '@mikro-orm/core';
import { Decimal } from '#src/lib/money.ts';

/**
 * Money on `numeric` columns as bignumber.js values. MikroORM's own decimal type compares as
 * floats when detecting changes, which silently drops small edits; this one compares exactly.
 */
export class MoneyType extends Type<Decimal, string> {
  override convertToDatabaseValue(value: Decimal | string | null | undefined): string {
    if (value === null || value === undefined) return value as unknown as string;
    return new Decimal(value).toFixed();
  }

  override convertToJSValue(value: string | null | undefined): Decimal {
    if (value === null || value === undefined) return value as unknown as Decimal;
    return new Decimal(value);
  }

  override compareAsType(): string {
    return 'string';
  }

  override compareValues(a: string | null, b: string | null): boolean {
    if (a === null || b === null) return a === b;
    return new Decimal(a).eq(b);
  }

  override ensureComparable(): boolean {
    return true;
  }

  override getColumnType(): string {
    return 'numeric';
  }

  override toJSON(value: Decimal, _platform: Platform): string {
    return value.toFixed();
  }
}
