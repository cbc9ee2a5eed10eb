/**
 * The merchant API's dispatch, compiled once from its route list: which route a method and a path
 * reach, and the route's decoded path parameters. It answers exactly as @koa/router's dispatch of
 * the same routes did (default options), without matching the path against every route's regexp
 * and composing a chain of layers per request:
 *
 * - a route is a Koa template (`/v1/payouts/:id`) of literal segments and whole-segment params;
 * - literal segments match without regard to ASCII case (the router's regexps are `/i`);
 * - one trailing slash is ignored (`/v1/payouts/` is `/v1/payouts`), two are not;
 * - a param takes one non-empty segment, decoded with decodeURIComponent, or kept as sent when
 *   its escapes are malformed (`%E0%A4%A`): never an error. `%2F` is decoded to `/` in the value;
 * - an empty segment (`/v1//payouts`) matches nothing;
 * - HEAD reaches the GET routes;
 * - where routes overlap, the first declared wins, as the router ran the first matched layer.
 */

/** A route to dispatch to: its method, its Koa template (`/v1/payouts/:id`) and what serves it. */
export interface DispatchRoute<H> {
  method: string;
  path: string;
  handler: H;
}

/** A route a request reached, with its path parameters by name. */
export interface DispatchMatch<H> {
  route: DispatchRoute<H>;
  params: Record<string, string>;
}

/** A route as the matcher keeps it: per segment, the literal in lower case or the param's name. */
interface Compiled<H> {
  route: DispatchRoute<H>;
  literals: (string | null)[];
  names: (string | null)[];
}

/** The routes of one method: templates without params by exact path, all of them by segment count. */
interface MethodTable<H> {
  exact: Map<string, Compiled<H>>;
  bySegments: Compiled<H>[][];
}

const PARAM = /^:(\w+)$/;
/** Literal segments the matcher compares as plain text (path-to-regexp gives none a meaning). */
const LITERAL = /^[A-Za-z0-9._~-]+$/;

/** The compiled routes: what a request reaches, and which methods a path takes. */
export interface Dispatch<H> {
  /** The route `method` and `path` reach, with its decoded path parameters. */
  match(method: string, path: string): DispatchMatch<H> | undefined;
  /** The methods some route takes on `path` (HEAD wherever GET), as the router's layers listed them. */
  methods(path: string): string[];
}

/**
 * Compiles `routes` (in declaration order). Refuses a template this matcher cannot answer for
 * exactly as the router would (optional or wildcard parts, a param inside a segment), rather than
 * answer differently.
 */
export function compileDispatch<H>(routes: readonly DispatchRoute<H>[]): Dispatch<H> {
  const tables = new Map<string, MethodTable<H>>();
  for (const route of routes) {
    const compiled = compile(route);
    const method = route.method.toUpperCase();
    // The router answers HEAD with a GET route (its layers take HEAD wherever they take GET).
    for (const m of method === 'GET' ? ['GET', 'HEAD'] : [method]) {
      let table = tables.get(m);
      if (!table) {
        table = { exact: new Map(), bySegments: [] };
        tables.set(m, table);
      }
      const count = compiled.literals.length;
      table.bySegments[count] ??= [];
      table.bySegments[count].push(compiled);
    }
  }
  // A template without params, as written and with its trailing slash, is looked up whole; its
  // entry is whatever the segment match answers for it (an earlier param route may take it).
  for (const table of tables.values())
    for (const list of table.bySegments)
      for (const compiled of list ?? []) {
        if (compiled.names.some((n) => n !== null)) continue;
        for (const path of [compiled.route.path, `${compiled.route.path}/`]) {
          const winner = matchSegments(table, path);
          if (winner?.names.every((n) => n === null) && !table.exact.has(path)) table.exact.set(path, winner);
        }
      }

  return {
    match(method, path) {
      const table = tables.get(method);
      if (!table) return undefined;
      const exact = table.exact.get(path);
      if (exact) return { route: exact.route, params: {} };
      const segments = segmentsOf(path);
      if (!segments) return undefined;
      const compiled = firstMatch(table, segments);
      if (!compiled) return undefined;
      const params: Record<string, string> = {};
      for (let i = 0; i < segments.length; i++) {
        const name = compiled.names[i];
        if (name != null) params[name] = safeDecode(segments[i]!);
      }
      return { route: compiled.route, params };
    },
    methods(path) {
      const segments = segmentsOf(path);
      if (!segments) return [];
      const methods: string[] = [];
      for (const [method, table] of tables) if (firstMatch(table, segments)) methods.push(method);
      return methods;
    },
  };
}

function compile<H>(route: DispatchRoute<H>): Compiled<H> {
  if (!route.path.startsWith('/')) throw new Error(`route ${route.path} does not start with /`);
  const literals: (string | null)[] = [];
  const names: (string | null)[] = [];
  for (const segment of route.path.slice(1).split('/')) {
    const param = PARAM.exec(segment);
    if (param) {
      literals.push(null);
      names.push(param[1]!);
    } else if (LITERAL.test(segment)) {
      literals.push(segment.toLowerCase());
      names.push(null);
    } else throw new Error(`route ${route.path}: segment "${segment}" is neither a literal nor a :param`);
  }
  return { route, literals, names };
}

/** The path's segments, less one trailing slash; undefined when it is not absolute. */
function segmentsOf(path: string): string[] | undefined {
  if (path.charCodeAt(0) !== 47) return undefined;
  const end = path.length > 1 && path.charCodeAt(path.length - 1) === 47 ? path.length - 1 : path.length;
  return path.slice(1, end).split('/');
}

function matchSegments<H>(table: MethodTable<H>, path: string): Compiled<H> | undefined {
  const segments = segmentsOf(path);
  return segments && firstMatch(table, segments);
}

function firstMatch<H>(table: MethodTable<H>, segments: string[]): Compiled<H> | undefined {
  const candidates = table.bySegments[segments.length];
  if (!candidates) return undefined;
  outer: for (const compiled of candidates) {
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i]!;
      const literal = compiled.literals[i];
      if (literal == null ? segment.length === 0 : !sameLiteral(segment, literal)) continue outer;
    }
    return compiled;
  }
  return undefined;
}

/**
 * Whether a path segment is `literal` (lower case) but for ASCII case: what the router's `/i`
 * regexps accept, and no more (`toLowerCase` would also take the Kelvin sign for a k).
 */
function sameLiteral(segment: string, literal: string): boolean {
  if (segment === literal) return true;
  if (segment.length !== literal.length) return false;
  for (let i = 0; i < segment.length; i++) {
    let c = segment.charCodeAt(i);
    if (c >= 65 && c <= 90) c += 32;
    if (c !== literal.charCodeAt(i)) return false;
  }
  return true;
}

/** A param's value decoded, or as sent when its escapes are malformed (the router's own rule). */
function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
