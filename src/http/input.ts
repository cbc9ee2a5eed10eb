import type { ErrorDetail } from './errors.ts';

/**
 * Checks every request input gets before anything reads it deeply: how deep its JSON nests (at
 * parsing, before the idempotency fingerprint or the schemas recurse), and that its text holds no
 * control characters (PostgreSQL refuses U+0000 outright; the others have no place in names,
 * references or ids, and would reach logs, statements and webhooks).
 */

/** Deepest nesting of arrays and objects a JSON body or tRPC input may have. */
export const MAX_JSON_DEPTH = 32;

/**
 * True when the JSON text nests arrays and objects deeper than `max`: a scan of the text,
 * without parsing it (brackets inside strings do not count).
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** Which control characters a procedure refuses in its text inputs. */
export type TextRule = 'single-line' | 'multi-line';

/**
 * The first string of `input` (a field's value or an object's key) holding a control character
 * its rule refuses, as a detail naming the field; null when there is none. Merchant inputs are
 * single-line; operators' may break lines. A key `__proto__` is refused too: the schemas would
 * drop it without a word (a JavaScript object cannot own it as a plain key), losing what was sent.
 */
export function controlCharacterIssue(input: unknown, rule: TextRule): ErrorDetail | null {
  const issue =
    rule === 'single-line'
      ? 'must not contain control characters (U+0000–U+001F, U+007F–U+009F)'
      : 'must not contain control characters other than tab and line breaks (U+0000–U+001F, U+007F–U+009F)';
  // Iterative, so that no input can exhaust the stack, whatever reached here unparsed.
  const stack: { value: unknown; field: string }[] = [{ value: input, field: 'body' }];
  while (stack.length > 0) {
    const { value, field } = stack.pop()!;
    if (typeof value === 'string') {
      if (hasControl(value, rule)) return { field, issue };
    } else if (value !== null && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) {
        const path = field === 'body' ? key : `${field}.${key}`;
        if (hasControl(key, rule)) return { field: path, issue: 'is not a known field' };
        if (key === '__proto__')
          return {
            field: path,
            issue: field === 'body' ? 'is not a known field' : 'is not a usable key: __proto__ is reserved',
          };
        stack.push({ value: child, field: path });
      }
    }
  }
  return null;
}

/** How deep {@link alreadyClean} looks before it leaves an input to the full checks. */
const CLEAN_DEPTH = 4;

/**
 * True when `input` needs nothing from {@link wellFormed} and passes
 * {@link controlCharacterIssue}: objects and arrays (to a few levels) of well-formed strings
 * without the refused control characters, numbers, booleans and nulls, and no `__proto__` key.
 * Copies nothing and builds no field names: most requests are this, and anything else goes
 * through the full checks, which name the field.
 */
export function alreadyClean(input: unknown, rule: TextRule, depth = 0): boolean {
  if (typeof input === 'string') return input.isWellFormed() && !hasControl(input, rule);
  if (input === null || typeof input !== 'object') return true;
  if (depth >= CLEAN_DEPTH) return false;
  if (Array.isArray(input)) {
    for (const item of input) if (!alreadyClean(item, rule, depth + 1)) return false;
    return true;
  }
  for (const key of Object.keys(input)) {
    if (key === '__proto__' || !key.isWellFormed() || hasControl(key, rule)) return false;
    if (!alreadyClean((input as Record<string, unknown>)[key], rule, depth + 1)) return false;
  }
  return true;
}

/**
 * Whether `text` holds a control character `rule` refuses: Unicode's Cc (C0 U+0000–U+001F, DEL
 * U+007F and C1 U+0080–U+009F, all in the Basic Multilingual Plane), but for tab, line feed and
 * carriage return under the multi-line rule (operators' notes).
 */
function hasControl(text: string, rule: TextRule): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20) {
      if (rule === 'multi-line' && (c === 0x09 || c === 0x0a || c === 0x0d)) continue;
      return true;
    }
    if (c >= 0x7f && c <= 0x9f) return true;
  }
  return false;
}

/**
 * `value` with every lone UTF-16 surrogate (JSON's `"\ud800"`) replaced by U+FFFD, in strings and
 * in object keys: what PostgreSQL's UTF-8 would store anyway, so that a response, its replay and
 * a later read all say the same. Returns `value` itself when nothing needed replacing.
 */
export function wellFormed<T>(value: T): T {
  if (typeof value === 'string') return (value.isWellFormed() ? value : value.toWellFormed()) as T;
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const items = value.map(wellFormed);
    return (items.some((item, i) => item !== value[i]) ? items : value) as T;
  }
  const entries = Object.entries(value);
  const fixed = entries.map(([k, v]) => [wellFormed(k), wellFormed(v)] as const);
  if (fixed.every(([k, v], i) => k === entries[i]![0] && v === entries[i]![1])) return value;
  // fromEntries defines own properties: a `__proto__` key stays a key.
  return Object.fromEntries(fixed) as T;
}
