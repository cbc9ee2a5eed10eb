import fc from 'fast-check';
import { isMultipleOf, type OpenApi, resolve } from './document.ts';

type Schema = Record<string, any>;

/**
 * fast-check arbitraries of the values a JSON Schema of the OpenAPI document describes. `prefer`
 * gives known good values by property or parameter name (taken from the document's examples): the
 * arbitrary draws from them most of the time, so that generated requests look like real ones and
 * reach the service's logic, not only its validation. Conditions between fields (`if`/`then`) are
 * not generated: callers keep only the values that the whole schema accepts.
 */
export function arbitraryOf(
  doc: OpenApi,
  schema: Schema,
  prefer: ReadonlyMap<string, readonly unknown[]> = new Map(),
  name?: string,
): fc.Arbitrary<unknown> {
  const own = fromSchema(doc, schema, prefer);
  const known = name ? prefer.get(name) : undefined;
  return known && known.length > 0
    ? fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...known) }, { weight: 1, arbitrary: own })
    : own;
}

function fromSchema(
  doc: OpenApi,
  raw: Schema,
  prefer: ReadonlyMap<string, readonly unknown[]>,
): fc.Arbitrary<unknown> {
  const schema = raw.$ref ? { ...resolve<Schema>(doc, { $ref: raw.$ref }), ...withoutRef(raw) } : raw;
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const alternatives = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined;
  if (alternatives) return fc.oneof(...alternatives.map((s) => fromSchema(doc, s, prefer)));
  const type = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (type.length > 1)
    return fc.oneof(...type.map((t: string) => fromSchema(doc, { ...schema, type: t }, prefer)));
  switch (type[0]) {
    case 'string':
      return stringOf(schema);
    case 'integer':
      return fc.integer({ min: lower(schema, 1) ?? -1_000_000, max: upper(schema, 1) ?? 1_000_000 });
    case 'number': {
      const min = lower(schema, 0.01) ?? -1_000_000;
      const max = upper(schema, 0.01) ?? 10_000_000;
      // Besides round amounts, the edges a schema admits: the least, the most, and many decimals.
      const edges = [min, max, min + 0.123456789, 5e-324, 1e-7].filter((n) => {
        const above = typeof schema.exclusiveMinimum === 'number' ? n > schema.exclusiveMinimum : n >= min;
        const below = typeof schema.exclusiveMaximum === 'number' ? n < schema.exclusiveMaximum : n <= max;
        const step = typeof schema.multipleOf === 'number' ? isMultipleOf(n, schema.multipleOf) : true;
        return above && below && step;
      });
      return fc.oneof(
        fc.integer({ min: Math.ceil(min), max: Math.floor(max) }),
        fc.integer({ min: Math.ceil(min * 100), max: Math.floor(max * 100) }).map((n) => n / 100),
        ...(edges.length > 0 ? [fc.constantFrom(...edges)] : []),
      );
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(fromSchema(doc, schema.items ?? {}, prefer), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? 3, 3),
      });
    case 'object':
      return objectOf(doc, schema, prefer);
    default:
      return fc.oneof(fc.string(), fc.integer(), fc.boolean());
  }
}

function withoutRef(schema: Schema): Schema {
  const { $ref: _, description: __, default: ___, ...rest } = schema;
  return rest;
}

function objectOf(
  doc: OpenApi,
  schema: Schema,
  prefer: ReadonlyMap<string, readonly unknown[]>,
): fc.Arbitrary<unknown> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const model = Object.fromEntries(
    Object.entries(properties).map(([key, property]) => [key, arbitraryOf(doc, property, prefer, key)]),
  );
  return fc.record(model, { requiredKeys: (schema.required ?? []) as string[] });
}

function stringOf(schema: Schema): fc.Arbitrary<string> {
  const minLength = schema.minLength ?? 0;
  const maxLength = schema.maxLength ?? minLength + 40;
  if (schema.format === 'uuid') return fc.uuid({ version: 4 });
  if (schema.format === 'date-time')
    return fc
      .date({
        min: new Date('2020-01-01T00:00:00Z'),
        max: new Date('2030-12-31T00:00:00Z'),
        noInvalidDate: true,
      })
      .map((d) => d.toISOString());
  if (schema.pattern) {
    return fc
      .stringMatching(new RegExp(schema.pattern))
      .filter((s) => s.length >= minLength && s.length <= maxLength);
  }
  return fc.string({ minLength, maxLength: Math.min(maxLength, minLength + 40) });
}

/** The least value a number schema allows (`step` above an exclusive minimum). */
function lower(schema: Schema, step: number): number | undefined {
  if (typeof schema.exclusiveMinimum === 'number') return schema.exclusiveMinimum + step;
  return typeof schema.minimum === 'number' ? schema.minimum : undefined;
}

function upper(schema: Schema, step: number): number | undefined {
  if (typeof schema.exclusiveMaximum === 'number') return schema.exclusiveMaximum - step;
  return typeof schema.maximum === 'number' ? schema.maximum : undefined;
}

/** One way of making a valid value invalid, and the value it makes. */
export interface Mutation {
  /** What was broken, e.g. `destination_amount: below its minimum`. */
  what: string;
  value: unknown;
}

/**
 * The ways to break a valid object against its schema, one property at a time: drop a required
 * property, give a property the wrong type, a value outside its enum, a string that misses its
 * pattern or is too long, a number below its minimum, or add a property the schema does not know.
 */
export function mutationsOf(doc: OpenApi, rawSchema: Schema, value: Record<string, unknown>): Mutation[] {
  const schema = effectiveObject(doc, rawSchema, value);
  const out: Mutation[] = [{ what: 'the body is an array, not an object', value: [value] }];
  for (const key of (schema.required ?? []) as string[]) {
    if (!(key in value)) continue;
    const { [key]: _, ...rest } = value;
    out.push({ what: `${key}: required, left out`, value: rest });
  }
  for (const [key, raw] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
    for (const broken of brokenValues(doc, raw))
      out.push({ what: `${key}: ${broken.what}`, value: { ...value, [key]: broken.value } });
  }
  if (schema.additionalProperties === false)
    out.push({ what: 'an unknown property', value: { ...value, unexpected_field: 'x' } });
  return out;
}

/** The variant of a `oneOf` that `value` is (by its discriminator), or the schema itself. */
function effectiveObject(doc: OpenApi, raw: Schema, value: Record<string, unknown>): Schema {
  const schema = resolve<Schema>(doc, raw);
  const discriminator = schema.discriminator as
    | { propertyName: string; mapping: Record<string, string> }
    | undefined;
  if (!discriminator) return schema;
  const target = discriminator.mapping[String(value[discriminator.propertyName])];
  return target ? resolve<Schema>(doc, { $ref: target }) : schema;
}

/** Values a schema refuses, each with what makes it wrong. */
export function brokenValues(doc: OpenApi, raw: Schema): Mutation[] {
  const schema = raw.$ref ? { ...resolve<Schema>(doc, { $ref: raw.$ref }), ...withoutRef(raw) } : raw;
  const nullable = ((schema.anyOf ?? []) as Schema[]).some((s) => s.type === 'null');
  const inner = nullable ? ((schema.anyOf as Schema[]).find((s) => s.type !== 'null') ?? {}) : schema;
  const base = inner.$ref ? resolve<Schema>(doc, { $ref: inner.$ref }) : inner;
  const out: Mutation[] = [];
  if (Array.isArray(base.enum) || 'const' in base)
    out.push({ what: 'a value outside its set', value: '__NOT_A_VALUE__' });
  switch (base.type) {
    case 'string':
      out.push({ what: 'a number instead of a string', value: 12345 });
      if (base.pattern && !new RegExp(base.pattern).test('#!invalid!#'))
        out.push({ what: 'a string that misses its pattern', value: '#!invalid!#' });
      if (typeof base.maxLength === 'number')
        out.push({ what: 'longer than its maximum', value: 'x'.repeat(base.maxLength + 1) });
      if (typeof base.minLength === 'number' && base.minLength > 0)
        out.push({ what: 'shorter than its minimum', value: '' });
      break;
    case 'number':
    case 'integer':
      out.push({ what: 'a string instead of a number', value: 'not-a-number' });
      if (typeof base.exclusiveMinimum === 'number')
        out.push({ what: 'not above its minimum', value: base.exclusiveMinimum });
      if (typeof base.minimum === 'number') out.push({ what: 'below its minimum', value: base.minimum - 1 });
      if (typeof base.maximum === 'number') out.push({ what: 'above its maximum', value: base.maximum + 1 });
      if (base.type === 'integer') out.push({ what: 'a fraction instead of an integer', value: 1.5 });
      break;
    case 'boolean':
      out.push({ what: 'a string instead of a boolean', value: 'yes' });
      break;
  }
  return out;
}
