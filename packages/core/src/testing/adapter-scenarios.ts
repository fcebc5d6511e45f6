import { request as httpRequest } from 'node:http'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { AlgorithmResult } from '../algorithms/algorithm.js'
import type { HeadersOption } from '../http/adapter-options.js'
import { createLimiter, type Limiter } from '../limiter.js'
import type { RuleInput } from '../rules/schema.js'
import { MemoryStore } from '../stores/memory-store.js'
import type { ConsumeEntry, RefundEntry, Store } from '../stores/store.js'

/** A route of a scenario app. Every handler answers `200 {"ok":true}` unless `slow` or `fail`. */
export interface ScenarioRoute {
  readonly method: 'GET' | 'POST'
  /** Route pattern in the `/users/:id` syntax all three frameworks share. */
  readonly path: string
  /** Mount the limiter on this route with this cost (Express/Koa: route-level mount). */
  readonly cost?: number
  /** Not rate-limited at all (Fastify: `config.rateLimit: false`; Express/Koa: routed before the limiter). */
  readonly exempt?: boolean
  /** The handler waits until the harness's `gate` opens (for aborts while in flight). */
  readonly slow?: boolean
  /** The handler throws. */
  readonly fail?: boolean
}

/** What an adapter harness needs to build one scenario's app. */
export interface HarnessSetup {
  /** The limiter to mount (shared-Limiter form of the adapter). */
  readonly limiter: Limiter<never>
  readonly routes: readonly ScenarioRoute[]
  /** Trust X-Forwarded-For from any peer (Express `trust proxy`, Fastify `trustProxy`, Koa `app.proxy` + `maxIpsCount: 1`). */
  readonly trustProxy: boolean
  /** Adapter options every mount gets. */
  readonly options: { readonly headers?: HeadersOption; readonly shadowHeader?: boolean }
  /** Call at the start of every handler; await it in `slow` handlers before answering. */
  readonly enter: (route: ScenarioRoute) => Promise<void>
}

/** A response as the scenario runner compares it. */
export interface ScenarioResponse {
  readonly status: number
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  readonly text: string
}

/** A request a scenario sends. */
export interface ScenarioRequest {
  readonly method: 'GET' | 'POST'
  readonly path: string
  readonly headers?: Readonly<Record<string, string>>
}

/** A running app under test. */
export interface RunningApp {
  /** Send through the framework's test client (supertest, `inject()`). */
  send(req: ScenarioRequest): Promise<ScenarioResponse>
  /** Base URL of a listening loopback server, for drops and aborts that need a real socket. */
  readonly url: string
  close(): Promise<void>
}

/** One adapter under the scenario table. */
export interface AdapterHarness {
  readonly name: string
  start(setup: HarnessSetup): Promise<RunningApp>
}

/** What a step expects. Headers listed are compared exactly (undefined = absent). */
export interface ScenarioExpect {
  readonly status?: number
  readonly headers?: Readonly<Record<string, string | undefined>>
  /** Parsed JSON body; omitted = not compared. */
  readonly body?: unknown
  /** The connection is destroyed without a response. */
  readonly dropped?: boolean
}

/** One step of a scenario. */
export type ScenarioStep =
  | {
      readonly send: ScenarioRequest
      readonly expect: ScenarioExpect
      /** Over a real socket even when the harness's client is in-process (Fastify's inject). */
      readonly raw?: boolean
    }
  /** Send without awaiting the answer; the step ends once the limiter has decided it. */
  | { readonly sendInBackground: ScenarioRequest; readonly expect: ScenarioExpect }
  /** Open a real request, wait until its handler runs, then abort it client-side and wait for the refund. */
  | { readonly abortInFlight: ScenarioRequest }
  /** Open a real request, wait until the limiter decided it (queued), abort it, wait for the refund. */
  | { readonly abortQueued: ScenarioRequest }
  /**
   * Open a real request and destroy it client-side while the store's (held) answer is still on
   * its way; the answer is delivered at the next `deliverHeld` step.
   */
  | { readonly abortBeforeDecision: ScenarioRequest }
  /** Deliver the held store answer and let the limiter act on it. */
  | { readonly deliverHeld: true }
  /** Wait for every background request and check its expectation. */
  | { readonly settle: true }
  /** Move the injected clock. */
  | { readonly advanceMs: number }
  /** Let slow handlers answer from now on. */
  | { readonly openGate: true }
  /** How many times handlers ran so far (all routes). */
  | { readonly handlerCalls: number }

/** One row of the table. */
export interface AdapterScenario {
  readonly name: string
  readonly rules: readonly RuleInput[]
  readonly routes?: readonly ScenarioRoute[]
  /**
   * `garbage`/`garbage-async`: answers `undefined`, then a wrong-length array, then results with
   * wrong types, in turn (synchronously or as a promise).
   */
  readonly store?: 'memory' | 'throwing' | 'hanging' | 'garbage' | 'garbage-async'
  readonly timeoutMs?: number
  readonly trustProxy?: boolean
  readonly options?: HarnessSetup['options']
  readonly steps: readonly ScenarioStep[]
}

const GET = (path: string, headers?: Record<string, string>): ScenarioRequest => ({
  method: 'GET',
  path,
  ...(headers ? { headers } : {}),
})
const OK = { ok: true }
const JSON_TYPE = 'application/json; charset=utf-8'
const PROBLEM_TYPE = 'application/problem+json; charset=utf-8'
const DEFAULT_ROUTES: readonly ScenarioRoute[] = [
  { method: 'GET', path: '/' },
  { method: 'GET', path: '/users/:id' },
]

/** No RateLimit headers at all (fail-open, exempt, skipped). */
const NO_LIMIT_HEADERS = {
  'ratelimit-policy': undefined,
  ratelimit: undefined,
  'retry-after': undefined,
}

function problem(status: 429 | 503, ids: string[], retryAfter: number): object {
  return {
    type: 'about:blank',
    title: status === 503 ? 'Service Unavailable' : 'Too Many Requests',
    status,
    detail: `Rate limit exceeded (${ids.join(', ')}); retry in ${retryAfter} s.`,
    'violated-policies': ids,
    retryAfter,
  }
}

/**
 * The scenario table every adapter runs. Expected statuses, headers and bodies are literal, so
 * passing it means Express, Fastify and Koa answer byte-for-byte alike.
 */
export const adapterScenarios: readonly AdapterScenario[] = [
  {
    name: 'allow: RateLimit headers, handler runs',
    rules: [{ id: 'per-ip', limit: 3, window: '1m', algorithm: 'fixed-window' }],
    steps: [
      {
        send: GET('/'),
        expect: {
          status: 200,
          headers: {
            'ratelimit-policy': '"per-ip";q=3;w=60',
            ratelimit: '"per-ip";r=2;t=60',
            'retry-after': undefined,
            'content-type': JSON_TYPE,
          },
          body: OK,
        },
      },
      { handlerCalls: 1 },
    ],
  },
  {
    name: 'reject 429: Retry-After, problem+json, handler not run',
    rules: [{ id: 'per-ip', limit: 1, window: '10s', algorithm: 'fixed-window' }],
    steps: [
      { send: GET('/users/1'), expect: { status: 200, body: OK } },
      { advanceMs: 2500 },
      {
        send: GET('/users/2'),
        expect: {
          status: 429,
          headers: {
            'ratelimit-policy': '"per-ip";q=1;w=10',
            ratelimit: '"per-ip";r=0;t=8',
            'retry-after': '8',
            'content-type': PROBLEM_TYPE,
          },
          body: problem(429, ['per-ip'], 8),
        },
      },
      { handlerCalls: 1 },
    ],
  },
  {
    name: 'reject 503 when the rule says so',
    rules: [{ id: 'overload', limit: 1, window: '1s', onLimit: { action: 'reject', status: 503 } }],
    steps: [
      { send: GET('/'), expect: { status: 200 } },
      {
        send: GET('/'),
        expect: {
          status: 503,
          headers: { 'retry-after': '1', 'content-type': PROBLEM_TYPE },
          body: problem(503, ['overload'], 1),
        },
      },
    ],
  },
  {
    name: 'legacy and IETF headers together',
    rules: [{ id: 'per-ip', limit: 5, window: '1m', algorithm: 'fixed-window' }],
    options: { headers: 'both' },
    steps: [
      {
        send: GET('/'),
        expect: {
          status: 200,
          headers: {
            'ratelimit-policy': '"per-ip";q=5;w=60',
            ratelimit: '"per-ip";r=4;t=60',
            'x-ratelimit-limit': '5',
            'x-ratelimit-remaining': '4',
            'x-ratelimit-reset': '60',
          },
        },
      },
    ],
  },
  {
    name: 'headers off: no RateLimit headers, Retry-After still sent on refusal',
    rules: [{ id: 'per-ip', limit: 1, window: '1m', algorithm: 'fixed-window' }],
    options: { headers: false },
    steps: [
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS } },
      {
        send: GET('/'),
        expect: { status: 429, headers: { ratelimit: undefined, 'retry-after': '60' } },
      },
    ],
  },
  {
    name: 'queue then pass',
    rules: [
      {
        id: 'smooth',
        limit: 20,
        window: '1s',
        burst: 1,
        onLimit: { action: 'queue', maxWait: '1s', maxQueue: 5 },
      },
    ],
    steps: [
      { send: GET('/'), expect: { status: 200, body: OK } },
      { send: GET('/'), expect: { status: 200, body: OK } },
      { handlerCalls: 2 },
    ],
  },
  {
    name: 'queue full rejects',
    rules: [
      {
        id: 'smooth',
        limit: 4,
        window: '1s',
        burst: 1,
        onLimit: { action: 'queue', maxWait: '1s', maxQueue: 1 },
      },
    ],
    steps: [
      { send: GET('/'), expect: { status: 200 } },
      { sendInBackground: GET('/'), expect: { status: 200, body: OK } },
      {
        send: GET('/'),
        expect: {
          status: 429,
          headers: { 'retry-after': '1', 'content-type': PROBLEM_TYPE },
          body: problem(429, ['smooth'], 1),
        },
      },
      { settle: true },
      { handlerCalls: 2 },
    ],
  },
  {
    name: 'queue: a client that leaves while queued frees its place and its tokens',
    rules: [
      {
        id: 'smooth',
        limit: 10,
        window: '1s',
        burst: 1,
        // A leaked reservation would make the next wait 200 ms (> maxWait); a leaked place, a full queue.
        onLimit: { action: 'queue', maxWait: '150ms', maxQueue: 1 },
      },
    ],
    steps: [
      { send: GET('/'), expect: { status: 200 } },
      { abortQueued: GET('/') },
      { send: GET('/'), expect: { status: 200, body: OK } },
      { handlerCalls: 2 },
    ],
  },
  {
    name: 'drop: socket destroyed, no response, handler never runs',
    rules: [{ id: 'abuse', limit: 1, window: '1m', onLimit: 'drop' }],
    steps: [
      { send: GET('/'), expect: { status: 200 } },
      { send: GET('/'), expect: { dropped: true } },
      { handlerCalls: 1 },
    ],
  },
  {
    name: 'cost: a heavy route spends the shared budget once',
    rules: [{ id: 'budget', limit: 10, window: '1m', algorithm: 'fixed-window' }],
    routes: [...DEFAULT_ROUTES, { method: 'POST', path: '/export', cost: 10 }],
    steps: [
      {
        send: { method: 'POST', path: '/export' },
        expect: { status: 200, headers: { ratelimit: '"budget";r=0;t=60' }, body: OK },
      },
      { send: GET('/'), expect: { status: 429, body: problem(429, ['budget'], 60) } },
    ],
  },
  {
    name: 'exempt route: never limited, no headers',
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    routes: [...DEFAULT_ROUTES, { method: 'GET', path: '/health', exempt: true }],
    steps: [
      { send: GET('/health'), expect: { status: 200, headers: NO_LIMIT_HEADERS } },
      { send: GET('/health'), expect: { status: 200, headers: NO_LIMIT_HEADERS } },
      { send: GET('/'), expect: { status: 200 } },
      { send: GET('/health'), expect: { status: 200 } },
      { send: GET('/'), expect: { status: 429 } },
    ],
  },
  {
    name: 'route patterns: a rule on /users/:id leaves other paths alone',
    rules: [{ id: 'users', match: 'GET /users/:id', limit: 1, window: '1m' }],
    steps: [
      { send: GET('/users/1'), expect: { status: 200 } },
      { send: GET('/users/2'), expect: { status: 429 } },
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS } },
    ],
  },
  {
    name: 'shadow: never blocks, reports through Floodgate-Shadow',
    rules: [
      { id: 'enforced', limit: 100, window: '1m', algorithm: 'fixed-window' },
      { id: 'trial', limit: 1, window: '1m', shadow: true },
    ],
    options: { shadowHeader: true },
    steps: [
      { send: GET('/'), expect: { status: 200, headers: { 'floodgate-shadow': undefined } } },
      {
        send: GET('/'),
        expect: {
          status: 200,
          headers: {
            'floodgate-shadow': 'trial',
            'ratelimit-policy': '"enforced";q=100;w=60',
            ratelimit: '"enforced";r=98;t=60',
          },
          body: OK,
        },
      },
    ],
  },
  {
    name: 'fail-open: a throwing store passes with no RateLimit headers',
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    store: 'throwing',
    steps: [
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
    ],
  },
  {
    name: 'fail-open: a hanging store passes after timeoutMs',
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    store: 'hanging',
    timeoutMs: 15,
    steps: [
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
    ],
  },
  {
    name: 'concurrency: a client abort releases the slot',
    rules: [{ id: 'in-flight', algorithm: 'concurrency', limit: 1 }],
    routes: [...DEFAULT_ROUTES, { method: 'GET', path: '/slow', slow: true }],
    steps: [
      { abortInFlight: GET('/slow') },
      { openGate: true },
      { send: GET('/slow'), expect: { status: 200, body: OK } },
      { send: GET('/slow'), expect: { status: 200, body: OK } },
    ],
  },
  {
    name: 'concurrency: a client gone before an asynchronous decision does not keep its slot',
    rules: [{ id: 'in-flight', algorithm: 'concurrency', limit: 1 }],
    timeoutMs: 10_000,
    steps: [
      { abortBeforeDecision: GET('/') },
      // The store holds the slot while its answer is on the way. A round trip over a real
      // socket also lets the server see the first client's disconnect.
      { send: GET('/'), expect: { status: 429 }, raw: true },
      { deliverHeld: true },
      { send: GET('/'), expect: { status: 200, body: OK } },
      { send: GET('/'), expect: { status: 200, body: OK } },
      { handlerCalls: 2 },
    ],
  },
  {
    name: 'queue + concurrency: a client gone before an asynchronous decision gives both back',
    rules: [
      { id: 'in-flight', algorithm: 'concurrency', limit: 1 },
      {
        id: 'smooth',
        limit: 10,
        window: '1s',
        burst: 1,
        onLimit: { action: 'queue', maxWait: '150ms', maxQueue: 1 },
      },
    ],
    timeoutMs: 10_000,
    steps: [
      { send: GET('/'), expect: { status: 200 } },
      { advanceMs: 50 },
      { abortBeforeDecision: GET('/') },
      { send: GET('/'), expect: { status: 429 }, raw: true },
      { deliverHeld: true },
      { advanceMs: 100 },
      { send: GET('/'), expect: { status: 200, body: OK } },
      { handlerCalls: 2 },
    ],
  },
  {
    name: 'fail-open: a store answering garbage (sync) passes every request',
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    store: 'garbage',
    steps: [
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
    ],
  },
  {
    name: 'fail-open: a store answering garbage (async) passes every request',
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    store: 'garbage-async',
    steps: [
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
    ],
  },
  {
    name: 'concurrency: a throwing handler releases the slot',
    rules: [{ id: 'in-flight', algorithm: 'concurrency', limit: 1 }],
    routes: [...DEFAULT_ROUTES, { method: 'GET', path: '/boom', fail: true }],
    steps: [
      { send: GET('/boom'), expect: { status: 500 } },
      { send: GET('/boom'), expect: { status: 500 } },
      { send: GET('/'), expect: { status: 200 } },
    ],
  },
  {
    name: 'IPv6 clients group by /64; IPv4-mapped addresses key as IPv4',
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    trustProxy: true,
    steps: [
      { send: GET('/', { 'x-forwarded-for': '2001:db8:1:2::1' }), expect: { status: 200 } },
      { send: GET('/', { 'x-forwarded-for': '2001:db8:1:2:ffff::9' }), expect: { status: 429 } },
      { send: GET('/', { 'x-forwarded-for': '2001:db8:1:3::1' }), expect: { status: 200 } },
      { send: GET('/', { 'x-forwarded-for': '::ffff:192.0.2.1' }), expect: { status: 200 } },
      { send: GET('/', { 'x-forwarded-for': '192.0.2.1' }), expect: { status: 429 } },
      { send: GET('/', { 'x-forwarded-for': '192.0.2.2' }), expect: { status: 200 } },
    ],
  },
  {
    name: 'spoofed X-Forwarded-For is ignored without trust proxy',
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    trustProxy: false,
    steps: [
      { send: GET('/', { 'x-forwarded-for': '198.51.100.1' }), expect: { status: 200 } },
      { send: GET('/', { 'x-forwarded-for': '198.51.100.2' }), expect: { status: 429 } },
      { send: GET('/', { 'x-forwarded-for': '198.51.100.3' }), expect: { status: 429 } },
    ],
  },
]

/** Wraps a store to report refunds and decisions, so steps can wait for them without sleeping. */
class ObservedStore implements Store {
  refunds = 0
  consumes = 0
  private waiters: Array<() => void> = []
  private holding = false
  private held: Array<() => void> = []

  constructor(private readonly inner: Store) {}

  consume(
    entries: readonly ConsumeEntry[],
    nowMs: number,
  ): readonly AlgorithmResult[] | Promise<readonly AlgorithmResult[]> {
    this.consumes++
    const answer = this.inner.consume(entries, nowMs)
    if (this.holding) {
      this.holding = false
      // Copy now: a synchronous store reuses its result objects.
      const settled = Promise.resolve(answer).then((r) => r.map((x) => ({ ...x })))
      const out = new Promise<readonly AlgorithmResult[]>((resolve) => {
        this.held.push(() => resolve(settled))
      })
      this.wake()
      return out
    }
    this.wake()
    return answer
  }

  /** Hold the next consume's answer until {@link deliver}. */
  holdNext(): void {
    this.holding = true
  }

  deliver(): void {
    for (const f of this.held.splice(0)) f()
  }

  refund(entries: readonly RefundEntry[], nowMs: number): void | Promise<void> {
    this.refunds++
    this.wake()
    return this.inner.refund(entries, nowMs)
  }

  private wake(): void {
    const w = this.waiters
    this.waiters = []
    for (const f of w) f()
  }

  /** Resolves once `test()` holds, re-checked after every store call. */
  async until(test: () => boolean): Promise<void> {
    while (!test()) await new Promise<void>((resolve) => this.waiters.push(resolve))
  }
}

function makeStore(kind: AdapterScenario['store']): Store {
  if (kind === 'throwing') {
    return {
      consume: () => {
        throw new Error('store down')
      },
      refund: () => {},
    }
  }
  if (kind === 'garbage' || kind === 'garbage-async') {
    const answers: unknown[] = [undefined, [], [{ allowed: 'yes', remaining: NaN }]]
    let i = 0
    return {
      consume: () => {
        const a = answers[i++ % answers.length] as readonly AlgorithmResult[]
        return kind === 'garbage' ? a : Promise.resolve(a)
      },
      refund: () => {},
    }
  }
  if (kind === 'hanging') {
    return { consume: () => new Promise<never>(() => {}), refund: () => {} }
  }
  return new MemoryStore()
}

/** Send a request over a real socket; resolves with the response, or `dropped` when the socket dies first. */
function rawRequest(
  url: string,
  req: ScenarioRequest,
  onRequest?: (abort: () => void) => void,
): Promise<ScenarioResponse | 'dropped'> {
  return new Promise((resolve) => {
    const r = httpRequest(`${url}${req.path}`, {
      method: req.method,
      headers: req.headers,
      agent: false,
    })
    r.on('response', (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (text += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }))
      res.on('error', () => resolve('dropped'))
    })
    r.on('error', () => resolve('dropped'))
    onRequest?.(() => r.destroy())
    r.end()
  })
}

function check(res: ScenarioResponse | 'dropped', want: ScenarioExpect, label: string): void {
  if (want.dropped) {
    expect(res, `${label}: dropped`).toBe('dropped')
    return
  }
  expect(res, `${label}: a response`).not.toBe('dropped')
  const r = res as ScenarioResponse
  if (want.status !== undefined) expect(r.status, `${label}: status (${r.text})`).toBe(want.status)
  for (const [name, value] of Object.entries(want.headers ?? {})) {
    expect(r.headers[name], `${label}: header ${name}`).toBe(value)
  }
  if (want.body !== undefined) expect(JSON.parse(r.text), `${label}: body`).toStrictEqual(want.body)
}

/** Options of {@link describeAdapterScenarios}. */
export interface AdapterScenarioOptions {
  /**
   * Builds the store of each scenario that uses the default in-memory one, to run the table
   * on another store (a RedisStore with a fresh key prefix and the caller's clock). Called
   * once per scenario.
   */
  readonly makeStore?: () => Store
}

/**
 * Run the scenario table against one adapter, through its real framework. Each adapter's test
 * calls this with a harness that builds the app its idiomatic way; the expectations are the
 * same literal values for all of them.
 *
 * @param harness - builds and starts an app for a scenario
 * @param scenarios - the table (default: {@link adapterScenarios})
 * @param options - another store for the in-memory scenarios
 * @example
 * describeAdapterScenarios({ name: 'express', start: async (setup) => startExpress(setup) })
 */
export function describeAdapterScenarios(
  harness: AdapterHarness,
  scenarios: readonly AdapterScenario[] = adapterScenarios,
  options: AdapterScenarioOptions = {},
): void {
  describe(`${harness.name}: adapter scenarios`, () => {
    let running: RunningApp | undefined
    // An unhandled rejection ends a Node server: no scenario may cause one.
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason)
    }
    beforeAll(() => {
      process.on('unhandledRejection', onUnhandled)
    })
    afterAll(() => {
      process.off('unhandledRejection', onUnhandled)
    })
    afterEach(async () => {
      await running?.close()
      running = undefined
      expect(unhandled, 'unhandled rejections').toEqual([])
    })

    for (const scenario of scenarios) {
      it(scenario.name, async () => {
        // On a minute boundary, so fixed windows start with the scenario.
        let now = 1_699_999_980_000
        const custom = (scenario.store ?? 'memory') === 'memory' ? options.makeStore?.() : undefined
        const store = new ObservedStore(custom ?? makeStore(scenario.store))
        const limiter = createLimiter({
          rules: scenario.rules,
          store,
          clock: () => now,
          timeoutMs: scenario.timeoutMs ?? 50,
        })
        let calls = 0
        let openGate: () => void = () => {}
        const gate = new Promise<void>((resolve) => (openGate = resolve))
        let entered: () => void = () => {}
        let enteredOnce = new Promise<void>((resolve) => (entered = resolve))
        const app = await harness.start({
          limiter,
          routes: scenario.routes ?? DEFAULT_ROUTES,
          trustProxy: scenario.trustProxy ?? false,
          options: scenario.options ?? {},
          enter: (route) => {
            calls++
            entered()
            return route.slow ? gate : Promise.resolve()
          },
        })
        running = app
        const background: Array<Promise<void>> = []
        for (const [i, step] of scenario.steps.entries()) {
          const label = `${scenario.name} · step ${i}`
          if ('send' in step) {
            const res =
              step.expect.dropped || step.raw === true
                ? await rawRequest(app.url, step.send)
                : await app.send(step.send)
            check(res, step.expect, label)
          } else if ('sendInBackground' in step) {
            const decided = store.consumes + 1
            background.push(
              app.send(step.sendInBackground).then((res) => check(res, step.expect, label)),
            )
            await store.until(() => store.consumes >= decided)
          } else if ('abortInFlight' in step) {
            const refunded = store.refunds + 1
            enteredOnce = new Promise<void>((resolve) => (entered = resolve))
            const done = rawRequest(app.url, step.abortInFlight, (abort) => {
              void enteredOnce.then(abort)
            })
            expect(await done, `${label}: aborted`).toBe('dropped')
            await store.until(() => store.refunds >= refunded)
          } else if ('abortQueued' in step) {
            const decided = store.consumes + 1
            const refunded = store.refunds + 1
            const done = rawRequest(app.url, step.abortQueued, (abort) => {
              void store.until(() => store.consumes >= decided).then(abort)
            })
            expect(await done, `${label}: aborted`).toBe('dropped')
            await store.until(() => store.refunds >= refunded)
          } else if ('abortBeforeDecision' in step) {
            const decided = store.consumes + 1
            store.holdNext()
            const done = rawRequest(app.url, step.abortBeforeDecision, (abort) => {
              void store.until(() => store.consumes >= decided).then(abort)
            })
            expect(await done, `${label}: aborted`).toBe('dropped')
          } else if ('deliverHeld' in step) {
            store.deliver()
            // The limiter acts on the answer in microtasks; one macrotask turn covers them.
            await new Promise((resolve) => setImmediate(resolve))
          } else if ('settle' in step) {
            await Promise.all(background.splice(0))
          } else if ('advanceMs' in step) {
            now += step.advanceMs
          } else if ('openGate' in step) {
            openGate()
          } else {
            expect(calls, `${label}: handler calls`).toBe(step.handlerCalls)
          }
        }
        await Promise.all(background)
        await limiter.close()
      })
    }
  })
}
