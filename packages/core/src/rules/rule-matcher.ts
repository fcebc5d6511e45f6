import type { HeaderBag, MatchFacts } from './match-facts.js'
import type { CompiledRule } from './compiled-rules.js'
import type { RuleMatch } from './rule.js'
import {
  ONE,
  REST,
  compilePattern,
  isLiteral,
  matchSegments,
  pathReadings,
  routeSegments,
  type PatternSegment,
} from './path-pattern.js'

/** Options of {@link RuleMatcher}. */
export interface RuleMatcherOptions {
  /**
   * Most raw paths remembered per method before the cache is emptied. Paths come from
   * clients, so the cache must stay bounded whatever they send.
   * @default 10000
   */
  readonly pathCacheSize?: number | undefined
  /**
   * Most route patterns remembered per method. Routes come from the application and are few;
   * the bound only guards against an adapter that passes raw paths as routes.
   * @default 10000
   */
  readonly routeCacheSize?: number | undefined
}

const EMPTY: readonly CompiledRule[] = Object.freeze([])
// Header/host-conditioned candidates up to this count get a cached answer per combination
// of conditions (2^6 = 64 arrays at most); beyond it, an answer is built per request.
const MAX_CACHED_CONDITIONS = 6
const INTERN_LIMIT = 10_000
const UNION_LIMIT = 256

interface Conditions {
  /** Header names (lower-case), and beside each the value wanted or `true` for presence. */
  readonly headerNames: readonly string[]
  readonly headerValues: readonly (string | true)[]
  readonly exactHosts: ReadonlySet<string> | undefined
  /** `*.example.com` stored as `.example.com`. */
  readonly hostSuffixes: readonly string[]
}

interface Entry {
  readonly index: number
  readonly compiled: CompiledRule
  /** undefined: any path. */
  readonly patterns: readonly (readonly PatternSegment[])[] | undefined
  /** Patterns with a wildcard (literal ones are found through the table's map). */
  readonly wild: readonly (readonly PatternSegment[])[]
  readonly conditions: Conditions | undefined
}

/** The rules whose method and path match, with what remains to check per request. */
class Candidates {
  /** The answer when no candidate has header or host conditions. */
  readonly all: readonly CompiledRule[]
  /** Candidates with header or host conditions, or undefined when there are none. */
  readonly conditional: readonly Entry[] | undefined
  private readonly variants: (readonly CompiledRule[] | undefined)[] | undefined
  unions: Map<Candidates, Candidates> | undefined

  constructor(readonly entries: readonly Entry[]) {
    const conditional = entries.filter((e) => e.conditions)
    this.conditional = conditional.length > 0 ? conditional : undefined
    this.all = Object.freeze(entries.map((e) => e.compiled))
    this.variants =
      conditional.length > 0 && conditional.length <= MAX_CACHED_CONDITIONS
        ? new Array<readonly CompiledRule[] | undefined>(1 << conditional.length)
        : undefined
  }

  /** The candidates whose header and host conditions hold for this request. */
  select(facts: MatchFacts): readonly CompiledRule[] {
    const variants = this.variants
    if (!variants) return this.build(facts)
    const conditional = this.conditional!
    let mask = 0
    for (let i = 0; i < conditional.length; i++) {
      if (conditionsHold(conditional[i]!.conditions!, facts)) mask |= 1 << i
    }
    const cached = variants[mask]
    if (cached) return cached
    return (variants[mask] = this.build(facts))
  }

  private build(facts: MatchFacts): readonly CompiledRule[] {
    const out: CompiledRule[] = []
    for (const e of this.entries) {
      if (!e.conditions || conditionsHold(e.conditions, facts)) out.push(e.compiled)
    }
    return out.length === 0 ? EMPTY : Object.freeze(out)
  }
}

function headerValue(headers: HeaderBag, name: string): string | readonly string[] | undefined {
  // Own properties only: a plain headers object inherits `constructor`, `toString`, and
  // whatever a polluted Object.prototype carries; none of those is a header the client sent.
  if (!Object.hasOwn(headers, name)) return undefined
  const v = headers[name]
  return typeof v === 'string' || Array.isArray(v) ? v : undefined
}

/**
 * Whether a header's value is `want`, or holds it among its comma-separated values. Node joins
 * a repeated header into one string (`X-Plan: free` twice is `free, free`), which RFC 9110
 * §5.3 makes the same field as one line of the values with commas: compared whole only, a
 * condition would step aside for a client that repeats the header.
 */
function headerHas(got: string | readonly string[], want: string): boolean {
  if (typeof got === 'string') return got === want || (got.includes(',') && listHas(got, want))
  for (const v of got) if (v === want || (v.includes(',') && listHas(v, want))) return true
  return false
}

// One of the comma-separated values, without the spaces and tabs around it (RFC 9110's OWS),
// is `want`. A scan, not a regular expression: a value of many blanks cannot make it slow.
function listHas(value: string, want: string): boolean {
  let start = 0
  while (start <= value.length) {
    let end = value.indexOf(',', start)
    if (end === -1) end = value.length
    let a = start
    let b = end
    while (a < b && isBlank(value.charCodeAt(a))) a++
    while (b > a && isBlank(value.charCodeAt(b - 1))) b--
    if (b - a === want.length && value.startsWith(want, a)) return true
    start = end + 1
  }
  return false
}

const isBlank = (c: number): boolean => c === 32 || c === 9

function conditionsHold(c: Conditions, facts: MatchFacts): boolean {
  const names = c.headerNames
  for (let i = 0; i < names.length; i++) {
    const got = headerValue(facts.headers, names[i]!)
    if (got === undefined) return false
    const want = c.headerValues[i]!
    if (want !== true && !headerHas(got, want)) return false
  }
  if (c.exactHosts || c.hostSuffixes.length > 0) {
    let host = facts.host
    if (host === undefined) return false
    if (!hostMatches(c, host)) {
      // Adapters pass lower-case hosts without a port; normalise only when that fails, so a
      // client cannot step around a host rule with `API.Example.com:443`.
      const colon = host.lastIndexOf(':')
      host = (
        colon > host.lastIndexOf(']') && colon !== -1 ? host.slice(0, colon) : host
      ).toLowerCase()
      if (host.endsWith('.')) host = host.slice(0, -1)
      if (!hostMatches(c, host)) return false
    }
  }
  return true
}

function hostMatches(c: Conditions, host: string): boolean {
  if (c.exactHosts?.has(host)) return true
  for (const suffix of c.hostSuffixes) {
    if (host.length > suffix.length && host.endsWith(suffix)) return true
  }
  return false
}

/** A route pattern's segments as wildcards, to test which rules an instance might match. */
function routeShape(segments: readonly string[]): PatternSegment[] | undefined {
  const out: PatternSegment[] = []
  for (const s of segments) {
    if (s.startsWith(':') && !/[{}()?+*]/.test(s)) out.push(ONE)
    else if (s === '*' || /^\*[A-Za-z0-9_]*$/.test(s)) out.push(REST)
    // Optional groups, regex parameters and the like: shape unknown.
    else if (/[{}()?+*:]/.test(s)) return undefined
    else out.push(s)
  }
  return out
}

/**
 * Whether some path matching `route` could match `pattern` (conservative: may say yes). A
 * route parameter may stand for no segment at all: Fastify hands `/users//posts` to
 * `/users/:id/posts` with an empty `id`, and the path, read without empty segments, is
 * `/users/posts`. A walk over (pattern, route) positions, each visited once.
 */
function overlaps(pattern: readonly PatternSegment[], route: readonly PatternSegment[]): boolean {
  const width = route.length + 1
  const seen = new Set<number>()
  const todo = [0]
  while (todo.length > 0) {
    const at = todo.pop()!
    if (seen.has(at)) continue
    seen.add(at)
    const i = Math.floor(at / width)
    const j = at % width
    if (i === pattern.length && j === route.length) return true
    const p = pattern[i]
    const r = route[j]
    if (p === REST || r === REST) return true
    // The parameter empty: the path has no segment for it.
    if (r === ONE) todo.push(at + 1)
    if (p !== undefined && r !== undefined && (p === ONE || r === ONE || p === r)) {
      todo.push(at + width + 1)
    }
  }
  return false
}

interface RouteResult {
  readonly candidates: Candidates
  /** True when a rule not matching the route pattern could still match some concrete path. */
  readonly needsPath: boolean
}

/** The rules that can apply to one HTTP method, with its caches. */
class MethodTable {
  /** The answer for every request, when no rule of this method has a condition. */
  readonly direct: readonly CompiledRule[] | undefined
  /** The candidates for every path, when no rule of this method has a path condition. */
  readonly anyPath: Candidates | undefined
  private readonly literal = new Map<string, Set<number>>()
  private readonly pathCache = new Map<string, Candidates>()
  private readonly routeCache = new Map<string, RouteResult>()
  private readonly interned = new Map<string, Candidates>()
  // One-entry memos in front of the Maps: a hot route or path is answered by comparing one
  // string (usually the very same string object), without hashing it.
  private lastPath: string | undefined
  private lastPathResult: Candidates | undefined
  private lastRoute: string | undefined
  private lastRouteResult: RouteResult | undefined

  constructor(
    private readonly entries: readonly Entry[],
    private readonly pathCacheSize: number,
    private readonly routeCacheSize: number,
  ) {
    for (const e of entries) {
      for (const p of e.patterns ?? []) {
        if (!isLiteral(p)) continue
        const key = p.join('/')
        let set = this.literal.get(key)
        if (!set) this.literal.set(key, (set = new Set()))
        set.add(e.index)
      }
    }
    if (entries.every((e) => !e.patterns)) {
      this.anyPath = this.intern(entries)
      if (!this.anyPath.conditional) this.direct = this.anyPath.all
    }
  }

  /** Number of raw paths currently cached (for tests and metrics). */
  get cachedPaths(): number {
    return this.pathCache.size
  }

  forPath(path: string): Candidates {
    if (path === this.lastPath) return this.lastPathResult!
    const found = this.pathCache.get(path) ?? this.resolvePath(path)
    this.lastPath = path
    this.lastPathResult = found
    return found
  }

  private resolvePath(path: string): Candidates {
    // Every reading of the path (as routed, as a file server reads it): a rule matching any of
    // them applies.
    const readings = pathReadings(path)
    let found = this.candidatesFor(readings[0]!)
    for (let i = 1; i < readings.length; i++) {
      found = this.union(found, this.candidatesFor(readings[i]!))
    }
    // Emptying the whole map is O(1) amortised and cannot be steered by a client the way an
    // eviction order could; the hot paths come back on their next request.
    if (this.pathCache.size >= this.pathCacheSize) this.pathCache.clear()
    this.pathCache.set(path, found)
    return found
  }

  forRoute(route: string, path: string): Candidates {
    let r = route === this.lastRoute ? this.lastRouteResult : this.routeCache.get(route)
    if (!r) {
      const segments = routeSegments(route)
      const candidates = this.candidatesFor(segments)
      const shape = routeShape(segments)
      const needsPath = this.entries.some(
        (e) =>
          e.patterns !== undefined &&
          !candidates.entries.includes(e) &&
          (shape === undefined || e.patterns.some((p) => overlaps(p, shape))),
      )
      r = { candidates, needsPath }
      if (this.routeCache.size >= this.routeCacheSize) this.routeCache.clear()
      this.routeCache.set(route, r)
    }
    this.lastRoute = route
    this.lastRouteResult = r
    if (!r.needsPath) return r.candidates
    return this.union(r.candidates, this.forPath(path))
  }

  private union(a: Candidates, b: Candidates): Candidates {
    if (b === a || b.entries.length === 0) return a
    let unions = a.unions
    const hit = unions?.get(b)
    if (hit) return hit
    const merged = this.entries.filter((e) => a.entries.includes(e) || b.entries.includes(e))
    const result = this.intern(merged)
    if (!unions || unions.size >= UNION_LIMIT) unions = a.unions = new Map()
    unions.set(b, result)
    return result
  }

  private candidatesFor(segments: readonly string[]): Candidates {
    const literalHits = this.literal.get(segments.join('/'))
    const found: Entry[] = []
    for (const e of this.entries) {
      if (
        !e.patterns ||
        literalHits?.has(e.index) ||
        e.wild.some((p) => matchSegments(p, segments))
      ) {
        found.push(e)
      }
    }
    return this.intern(found)
  }

  // Many paths share one answer; interning keeps one frozen array per distinct answer.
  private intern(entries: readonly Entry[]): Candidates {
    const key = entries.map((e) => e.index).join(',')
    const hit = this.interned.get(key)
    if (hit) return hit
    const c = new Candidates(entries)
    if (this.interned.size < INTERN_LIMIT) this.interned.set(key, c)
    return c
  }
}

function toEntry(compiled: CompiledRule, index: number): Entry | undefined {
  const match = compiled.rule.match
  // `match: false`: the rule is used through limiter.limit() only and never indexed here.
  if (match === false) return undefined
  const { paths, headers, hosts } = match
  const patterns = paths?.map(compilePattern)
  let conditions: Conditions | undefined = undefined
  const headerList = headers ? Object.entries(headers) : []
  if (headerList.length > 0 || (hosts && hosts.length > 0)) {
    const exact = (hosts ?? []).filter((h) => !h.startsWith('*.'))
    conditions = {
      headerNames: headerList.map(([n]) => n.toLowerCase()),
      headerValues: headerList.map(([, v]) => v),
      exactHosts: exact.length > 0 ? new Set(exact.map((h) => h.toLowerCase())) : undefined,
      hostSuffixes: (hosts ?? [])
        .filter((h) => h.startsWith('*.'))
        .map((h) => h.slice(1).toLowerCase()),
    }
  }
  return {
    index,
    compiled,
    patterns,
    wild: (patterns ?? []).filter((p) => !isLiteral(p)),
    conditions,
  }
}

/**
 * Finds the rules that apply to a request, without regular expressions and, for repeated
 * routes and paths, without allocating.
 *
 * Rules are indexed by method. For each method: rules with no path, header or host condition
 * are resolved once; literal paths sit in a Map; patterns are matched segment by segment.
 * Answers are cached per route pattern (few, chosen by the application) and per raw path
 * in a bounded cache (many, chosen by clients). A rule applies when its pattern matches the
 * route pattern or the concrete path, so `/users/:id` and `/users/42` both work whether or
 * not the adapter knows the route.
 */
export class RuleMatcher {
  private readonly byMethod = new Map<string, MethodTable>()
  private readonly other: MethodTable
  /** The answer for every request when no rule has any condition at all. */
  private readonly direct: readonly CompiledRule[] | undefined
  // A one-entry memo in front of `byMethod`: most requests carry the method the previous one did.
  private lastMethod: string | undefined
  private lastTable: MethodTable | undefined

  /**
   * @param rules - Compiled rules in declaration order.
   * @param options - Cache bounds.
   */
  constructor(rules: readonly CompiledRule[], options: RuleMatcherOptions = {}) {
    const pathCacheSize = Math.max(1, options.pathCacheSize ?? 10_000)
    const routeCacheSize = Math.max(1, options.routeCacheSize ?? 10_000)
    // Indexes stay those of declaration order, so answers keep that order.
    const entries = rules.map(toEntry).filter((e) => e !== undefined)
    const methodsOf = (e: Entry): ReadonlySet<string> | undefined => {
      const m = (e.compiled.rule.match as RuleMatch).methods
      if (!m) return undefined
      const set = new Set(m.map((x) => x.toUpperCase()))
      // Frameworks answer HEAD with the GET handler, so a GET limit must cover HEAD too.
      if (set.has('GET')) set.add('HEAD')
      return set
    }
    const methodSets = entries.map(methodsOf)
    const named = new Set(methodSets.flatMap((s) => (s ? [...s] : [])))
    for (const method of named) {
      const mine = entries.filter((_, i) => !methodSets[i] || methodSets[i].has(method))
      this.byMethod.set(method, new MethodTable(mine, pathCacheSize, routeCacheSize))
    }
    this.other = new MethodTable(
      entries.filter((_, i) => !methodSets[i]),
      pathCacheSize,
      routeCacheSize,
    )
    this.direct = named.size === 0 ? this.other.direct : undefined
  }

  /**
   * The rules that apply to a request, in declaration order.
   *
   * @param facts - The request; `method`, `path`, `route`, `headers` and `host` are read.
   * @returns A shared frozen array: do not modify it.
   */
  match(facts: MatchFacts): readonly CompiledRule[] {
    if (this.direct) return this.direct
    const method = facts.method
    let table: MethodTable
    if (method === this.lastMethod) table = this.lastTable!
    else {
      table = this.byMethod.get(method) ?? this.other
      this.lastMethod = method
      this.lastTable = table
    }
    if (table.direct) return table.direct
    const candidates =
      table.anyPath ??
      (facts.route !== undefined
        ? table.forRoute(facts.route, facts.path)
        : table.forPath(facts.path))
    return candidates.conditional ? candidates.select(facts) : candidates.all
  }

  /** Raw paths cached over all methods: stays bounded whatever clients send. */
  get cachedPaths(): number {
    let n = this.other.cachedPaths
    for (const t of this.byMethod.values()) n += t.cachedPaths
    return n
  }
}
