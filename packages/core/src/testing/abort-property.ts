import { request as httpRequest } from 'node:http'
import { connect } from 'node:net'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { AlgorithmResult } from '../algorithms/algorithm.js'
import { createLimiter } from '../limiter.js'
import type { Limiter } from '../limiter-types.js'
import { MemoryStore } from '../stores/memory-store.js'
import type { RuleInput } from '../rules/schema.js'
import type { ConsumeEntry, RefundEntry, Store } from '../stores/store.js'
import type { AdapterHarness, ScenarioRoute } from './scenario-types.js'
import { closesAppAfterEach, type StartedApp } from './unhandled-rejections.js'

// Two slots on `/c`; on `/q` a bucket of 2 that refills one token per 20 ms of the limiter's
// clock and queues up to 2 requests. The clock never moves, so every token spent stays spent
// and `resetMs` tells how many are: 20 ms each.
const SLOTS = 2
const BURST = 2
const MS_PER_TOKEN = 20
const QUEUE = 2
const NOW = 1_700_000_000_000
/** Every request of the property comes from this address (loopback). */
const CLIENT_IP = '127.0.0.1'

const ROUTES: readonly ScenarioRoute[] = [
  { method: 'GET', path: '/c', slow: true },
  { method: 'GET', path: '/q', slow: true },
]

const RULES: readonly RuleInput[] = [
  { id: 'slots', match: 'GET /c', algorithm: 'concurrency', limit: SLOTS },
  {
    id: 'smooth',
    match: 'GET /q',
    limit: 1000 / MS_PER_TOKEN,
    window: '1s',
    burst: BURST,
    onLimit: { action: 'queue', maxWait: '1s', maxQueue: QUEUE },
  },
]

/** The property's two routes: `/c` (concurrency slots) and `/q` (queueing bucket). */
export type Route = 'c' | 'q'

/**
 * One step of a run: requests start (several at once are pipelined on one connection, or
 * multiplexed on one HTTP/2 session; the step waits until the store is asked about the first),
 * a held store answer is delivered, a handler is let go, a client leaves (`whole`: with its
 * whole connection, every request on it), time passes.
 */
export type Action =
  | {
      readonly send: readonly Route[]
      /** Which of the transport's connections carries them (HTTP/2: a session). */
      readonly on?: number
      /** The client leaves the first request as soon as it is sent, before the limiter. */
      readonly leaveAtOnce?: boolean
    }
  | { readonly deliver: number }
  | { readonly open: number }
  | { readonly leave: number; readonly whole?: boolean }
  | { readonly turns: number }
  | { readonly sleepMs: number }

/** An arbitrary of some actions, with its weight among the others. */
export type WeightedAction = { readonly weight: number; readonly arbitrary: fc.Arbitrary<Action> }

/** The routes of one request. */
export const routeArb: fc.Arbitrary<Route> = fc.constantFrom<Route>('c', 'q')

/**
 * Plans' actions: the transport's ways of sending and of leaving, among the deliveries,
 * handlers let go and time passing every transport shares.
 */
export function actionsOf(
  sends: readonly WeightedAction[],
  leaves: readonly WeightedAction[],
): fc.Arbitrary<Action> {
  return fc.oneof(
    ...sends,
    { weight: 2, arbitrary: fc.record({ deliver: fc.nat(7) }) },
    { weight: 2, arbitrary: fc.record({ open: fc.nat(7) }) },
    ...leaves,
    { weight: 2, arbitrary: fc.record({ turns: fc.integer({ min: 1, max: 3 }) }) },
    { weight: 1, arbitrary: fc.record({ sleepMs: fc.integer({ min: 1, max: 30 }) }) },
  )
}

const http1Actions = actionsOf(
  [
    { weight: 4, arbitrary: fc.record({ send: fc.tuple(routeArb) }) },
    { weight: 1, arbitrary: fc.record({ send: fc.tuple(routeArb, routeArb) }) },
    // Written and reset at once (two requests: on a raw socket of their own).
    {
      weight: 1,
      arbitrary: fc.record({ send: fc.tuple(routeArb, routeArb), leaveAtOnce: fc.constant(true) }),
    },
  ],
  [{ weight: 3, arbitrary: fc.record({ leave: fc.nat(7) }) }],
)

/** A request's status, or `dropped` when it ended without an answer. */
export type Answer = number | 'dropped'

/** Requests a client sent together, and how it leaves them. */
export interface Exchange {
  readonly routes: readonly Route[]
  /** Exchanges with the same number share a connection (leave `whole` together). */
  readonly connection: number
  /** The client leaves these requests (HTTP/1.1: closes the connection; HTTP/2: resets the stream). */
  leave(): void
  /** The client leaves with its whole connection. */
  leaveConnection(): void
  /**
   * The client leaves as soon as its requests are written, abruptly (HTTP/1.1: a TCP reset once
   * connected); `leave` when absent.
   */
  readonly leaveAtOnce?: () => void
  /** Settles once the server has read the requests (HTTP/2: a PING came back); optional. */
  readonly arrived?: Promise<void>
  /** Each request's status, `dropped` for those that ended without an answer. */
  readonly done: Promise<readonly Answer[]>
}

/** Whether a request's client is still there, as the server sees it. */
export interface ClientPresence {
  readonly gone: () => boolean
  /** Calls `f` once the server sees the client leave (or the response close). */
  readonly onGone: (f: () => void) => void
}

/** An app started on a transport, for one run. */
export interface TransportRun {
  /** Sends requests on connection `on` (transports with one connection per send ignore it). */
  send(routes: readonly Route[], on: number): readonly Exchange[]
  /** Errors the framework reported (must stay empty). */
  readonly errors: readonly unknown[]
  close(): Promise<void>
}

/** How the property's clients reach an app, and how they leave. */
export interface AbortTransport {
  /** For the test titles. */
  readonly name: string
  /** The plans' actions. */
  readonly actions: fc.Arbitrary<Action>
  /** Plans that once found a defect: run first, every time, before the random ones. */
  readonly examples?: ReadonlyArray<readonly Action[]>
  /**
   * Starts an app with `limiter` mounted on the property's routes, whose handlers await
   * `enter(route, presence)` before answering.
   */
  start(
    limiter: Limiter<never>,
    enter: (route: Route, presence: ClientPresence) => Promise<void>,
  ): Promise<TransportRun>
}

let connections = 0

function open(url: string, route: Route): Exchange {
  const request = httpRequest(`${url}/${route}`, { agent: false })
  const done = new Promise<Answer>((resolve) => {
    request.on('response', (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
      res.on('error', () => resolve('dropped'))
      res.on('aborted', () => resolve('dropped'))
    })
    request.on('error', () => resolve('dropped'))
    request.on('close', () => resolve('dropped'))
  })
  request.end()
  const leave = (): void => void request.destroy()
  const connection = ++connections
  return { routes: [route], connection, leave, leaveConnection: leave, done: done.then((a) => [a]) }
}

/** Several requests written back to back on one connection, the last asking to close it. */
function openPipelined(url: string, routes: readonly Route[]): Exchange {
  const { hostname, port } = new URL(url)
  const socket = connect(Number(port), hostname)
  socket.on('error', () => {})
  const bytes = routes
    .map((r, i) => {
      const last = i === routes.length - 1
      return `GET /${r} HTTP/1.1\r\nHost: ${hostname}\r\nConnection: ${last ? 'close' : 'keep-alive'}\r\n\r\n`
    })
    .join('')
  socket.write(bytes)
  let text = ''
  socket.setEncoding('latin1')
  // A response follows the body before it on the same line: no `^` anchor.
  socket.on('data', (chunk: string) => (text += chunk))
  const done = new Promise<readonly Answer[]>((resolve) => {
    socket.once('close', () => {
      const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]))
      resolve(routes.map((_, i) => statuses[i] ?? 'dropped'))
    })
  })
  const leave = (): void => void socket.destroy()
  // A reset (not a FIN) right after the requests: the server may read them with the reset,
  // when the connection's address can no longer be read.
  const reset = (): void => void socket.resetAndDestroy()
  const leaveAtOnce = (): void => void (socket.connecting ? socket.once('connect', reset) : reset())
  return { routes, connection: ++connections, leave, leaveConnection: leave, leaveAtOnce, done }
}

/**
 * HTTP/1.1 through an adapter harness: a request on a connection of its own, or two pipelined
 * on one; a client leaves by closing its connection.
 */
function http1Transport(harness: AdapterHarness): AbortTransport {
  return {
    name: harness.name,
    actions: http1Actions,
    examples: [
      // Found by this property: two requests reset as soon as written, read by the server with
      // the reset, were decided with no address (a shared key) on every adapter.
      [{ send: ['c', 'c'], leaveAtOnce: true }, { send: ['c'] }],
    ],
    async start(limiter, enter) {
      const app = await harness.start({
        limiter,
        routes: ROUTES,
        trustProxy: false,
        options: {},
        enter: (route, req) => {
          const socket = req.socket
          return enter(route.path === '/c' ? 'c' : 'q', {
            gone: () => socket.destroyed,
            onGone: (f) => void socket.once('close', f),
          })
        },
        beforeLimiter: () => Promise.resolve(),
      })
      return {
        send: (routes) => [
          routes.length === 1 ? open(app.url, routes[0]!) : openPipelined(app.url, routes),
        ],
        errors: [],
        close: () => app.close(),
      }
    },
  }
}

/**
 * A store whose answers wait until the plan delivers them (in any order), as a networked
 * store's answers may arrive after the client left. The store underneath decides at once; only
 * its answer is held. Over a synchronous store with `atOnce`, it answers at once instead.
 */
class PlannedStore implements Store {
  asked = 0
  private readonly held: Array<() => void> = []
  /** Once the plan has ended, answers are no longer held. */
  private holding = true
  private waiters: Array<() => void> = []

  /** As MemoryStore declares it, when answers come at once: the limiter's fast path runs. */
  readonly synchronous: boolean

  constructor(
    readonly inner: Store,
    atOnce: boolean,
  ) {
    this.synchronous = atOnce
  }

  consume(entries: readonly ConsumeEntry[], nowMs: number) {
    this.asked++
    for (const w of this.waiters.splice(0)) w()
    const answer = this.inner.consume(entries, nowMs)
    if (this.synchronous) return answer
    // Copied now: a synchronous store reuses its result objects.
    const copy = Array.isArray(answer)
      ? (answer as readonly AlgorithmResult[]).map((r) => ({ ...r }))
      : answer
    if (!this.holding) return Promise.resolve(copy)
    return new Promise<readonly AlgorithmResult[]>((resolve, reject) => {
      this.held.push(() => void Promise.resolve(copy).then(resolve, reject))
    })
  }

  refund(entries: readonly RefundEntry[], nowMs: number): void | Promise<void> {
    return this.inner.refund(entries, nowMs)
  }

  /** Delivers the `i`-th held answer (modulo how many are held); false when none is. */
  deliver(i: number): boolean {
    const f = this.held.splice(i % Math.max(1, this.held.length), 1)[0]
    f?.()
    return f !== undefined
  }

  /**
   * Delivers every held answer, and answers from now on without holding: a request the server
   * reads only now (one reset as soon as sent) must not wait for a delivery that never comes.
   */
  deliverAll(): void {
    this.holding = false
    for (const f of this.held.splice(0)) f()
  }

  /** Resolves once the store was asked `n` times, or `ends` settles first. */
  async askedFor(n: number, ends: Promise<unknown>): Promise<void> {
    let over = false
    void ends.then(() => (over = true))
    while (this.asked < n && !over) {
      await Promise.race([new Promise<void>((resolve) => this.waiters.push(resolve)), ends])
    }
  }
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Awaits `p`, failing the run (so fast-check reports its plan) if it takes over 5 s. */
async function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still waiting after 5 s`)), 5_000)
  })
  try {
    return await Promise.race([p, late])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Resolves once `read()` returns what `want()` says (both read again every 10 ms: a handler
 * may still start on a decision that was on its way), or fails with the last pair after `ms`.
 */
async function settlesTo<T>(read: () => Promise<T>, want: () => T, ms: number, what: () => string) {
  const until = Date.now() + ms
  let last = await read()
  while (JSON.stringify(last) !== JSON.stringify(want()) && Date.now() < until) {
    await sleep(10)
    last = await read()
  }
  expect(last, what()).toStrictEqual(want())
}

/** Options of {@link describeAbortProperty}. */
export interface AbortPropertyOptions {
  /**
   * A fresh store for each run (say a RedisStore under a new prefix, on the caller's clock):
   * it must be able to `peek`, and the property then runs with its answers held and delivered
   * in any order. Default: a MemoryStore, run once answering at once and once held.
   */
  readonly makeStore?: (() => Store) | undefined
  /**
   * fast-check runs per store (default 25 on HTTP/1.1, 100 on HTTP/2, or `ABORT_RUNS` from the
   * environment).
   */
  readonly runs?: number | undefined
}

const SYNC_AND_ASYNC = ['synchronous', 'asynchronous'] as const

/**
 * A property of what requests hold when their clients leave at random moments: before the
 * limiter, while an asynchronous store decides, while queued, while the handler runs, after
 * the response. Requests on `/c` hold one of two concurrency slots; requests on `/q` spend a
 * token of a bucket of two, queueing (up to two at once) when it is empty. Whatever the
 * interleaving:
 *
 * - no more handlers run on `/c` at once for clients still connected than there are slots (no
 *   slot is given back twice; a client that leaves gives its slot back, while its handler
 *   may still be working);
 * - once every exchange has ended, every slot is free again (none leaks);
 * - the bucket has spent exactly one token per `/q` handler that ran: a request that left
 *   before its handler (queued, or while its decision was on the way) got its token back, and
 *   a handler never runs on a token that was given back;
 * - every client that stayed got an answer (200, or 429 when refused), none was left hanging.
 *
 * Each adapter's tests call this with the harness its scenario table uses.
 *
 * @param harness - builds and starts an app for the property's routes
 * @param options - the store and the number of runs
 */
export function describeAbortProperty(
  harness: AdapterHarness,
  options: AbortPropertyOptions = {},
): void {
  describeAbortRuns(http1Transport(harness), options)
}

/**
 * The property's runs over `transport`: `describeAbortProperty` on HTTP/1.1,
 * `describeHttp2AbortProperty` on HTTP/2.
 */
export function describeAbortRuns(transport: AbortTransport, options: AbortPropertyOptions): void {
  const runs = options.runs ?? Number(process.env.ABORT_RUNS ?? 25)
  const kinds = options.makeStore ? (['asynchronous'] as const) : SYNC_AND_ASYNC
  describe(`${transport.name}: clients leaving at random moments`, () => {
    const started = closesAppAfterEach()

    for (const kind of kinds) {
      it(`${kind} store: slots, queue places and tokens match the handlers that ran`, async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.array(transport.actions, { minLength: 1, maxLength: 24 }),
            async (plan) => {
              const inner = options.makeStore?.() ?? new MemoryStore()
              await runPlan(
                transport,
                new PlannedStore(inner, kind === 'synchronous'),
                plan,
                started,
              )
            },
          ),
          { numRuns: runs, examples: (transport.examples ?? []).map((plan) => [plan]) },
        )
      })
    }
  })
}

/** Runs one plan against a fresh app and checks the invariants once every exchange ended. */
async function runPlan(
  transport: AbortTransport,
  store: PlannedStore,
  plan: readonly Action[],
  started: StartedApp,
): Promise<void> {
  const inner = store.inner
  const decided: string[] = []
  const strangers: string[] = []
  const limiter = createLimiter({
    rules: RULES,
    store,
    clock: () => NOW,
    // Answers are held as long as the plan says: none fails open (the model has no fail-open).
    decisionTimeoutMs: 60_000,
    onDecision: (d, facts) => {
      decided.push(`${d.outcomes[0]?.rule.id}:${d.action}`)
      // A client gone before the limiter saw its request has no address left to read: deciding
      // it would charge every such client to one shared bucket.
      for (const o of d.outcomes)
        if (o.key !== CLIENT_IP) strangers.push(`${o.rule.id}:${d.action}`)
      // The facts name the client who was decided, also when it left while the store answered.
      if (facts.ip !== CLIENT_IP) strangers.push(`facts.ip ${String(facts.ip)}:${d.action}`)
    },
  })
  // Reads the same state, straight from the store underneath.
  const reader = createLimiter({ rules: RULES, store: inner, clock: () => NOW })
  const entered = { c: 0, q: 0 }
  let inside = 0
  let mostInside = 0
  const gates: Array<() => void> = []
  let letAllThrough = false
  const app = await transport.start(limiter, (r, presence) => {
    entered[r]++
    // A slot is held until the response closes: its handler counts as inside
    // until it answers or the server sees its client leave, whichever is first.
    let out = (): void => {}
    if (r === 'c' && !presence.gone()) {
      mostInside = Math.max(mostInside, ++inside)
      let counted = true
      out = () => {
        if (counted) inside--
        counted = false
      }
      presence.onGone(out)
    }
    if (letAllThrough) {
      out()
      return Promise.resolve()
    }
    return new Promise<void>((resolve) =>
      gates.push(() => {
        out()
        resolve()
      }),
    )
  })
  started.app = app
  const exchanges: Exchange[] = []
  const left = new Set<number>()
  const leave = (i: number): void => {
    left.add(i)
    exchanges[i]!.leave()
  }
  for (const action of plan) {
    if ('send' in action) {
      const asked = store.asked
      const sent = app.send(action.send, action.on ?? 0)
      exchanges.push(...sent)
      if (action.leaveAtOnce) {
        const i = exchanges.length - sent.length
        left.add(i)
        const exchange = exchanges[i]!
        ;(exchange.leaveAtOnce ?? exchange.leave)()
        continue
      }
      const ends = sent.length === 1 ? sent[0]!.done : Promise.all(sent.map((e) => e.done))
      await within(store.askedFor(asked + 1, ends), 'the store asked about a request sent')
      if (sent[0]!.arrived) await within(Promise.race([sent[0]!.arrived, ends]), 'a PING back')
    } else if ('deliver' in action) {
      if (store.deliver(action.deliver)) await turn()
    } else if ('open' in action) {
      const i = action.open % Math.max(1, gates.length)
      const gate = gates.splice(i, 1)[0]
      gate?.()
    } else if ('leave' in action) {
      const i = action.leave % Math.max(1, exchanges.length)
      const exchange = exchanges[i]
      if (exchange === undefined) continue
      if (action.whole) {
        exchanges.forEach((e, j) => e.connection === exchange.connection && left.add(j))
        exchange.leaveConnection()
      } else leave(i)
    } else if ('turns' in action) {
      for (let t = 0; t < action.turns; t++) await turn()
    } else await sleep(action.sleepMs)
  }
  // The rest go through: handlers waiting now, and those a queue still holds.
  letAllThrough = true
  store.deliverAll()
  for (const gate of gates.splice(0)) gate()
  const answers = await Promise.race([
    Promise.all(exchanges.map((e) => e.done)),
    sleep(5_000).then(() => 'hanging' as const),
  ])
  expect(answers, 'every exchange ended').not.toBe('hanging')
  const statuses = answers as ReadonlyArray<readonly Answer[]>
  statuses.forEach((answered, i) => {
    if (left.has(i)) return
    const what = `exchange ${i} (${exchanges[i]!.routes.join(', ')}) stayed`
    for (const status of answered) expect([200, 429], what).toContain(status)
  })
  expect(mostInside, 'handlers on /c at once').toBeLessThanOrEqual(SLOTS)

  const held = async () => {
    const states = await reader.get(CLIENT_IP)
    const slots = states.find((s) => s.rule.id === 'slots')
    const smooth = states.find((s) => s.rule.id === 'smooth')
    return {
      slotsFree: slots?.remaining,
      tokensSpent: Math.round((smooth?.resetMs ?? 0) / MS_PER_TOKEN),
    }
  }
  // The server learns of a client's leaving on its own turn: wait for it, bounded.
  await settlesTo(
    held,
    () => ({ slotsFree: SLOTS, tokensSpent: entered.q }),
    2_000,
    () =>
      `slots free and tokens spent, after ${JSON.stringify(entered)} handlers, decisions ${decided.join(' ')}, answers ${JSON.stringify(statuses)}`,
  )
  expect(app.errors, 'errors the framework reported').toEqual([])
  await within(app.close(), 'closing the app')
  started.app = undefined
  // Checked once the server is closed: it may read a request whose client left after the
  // client's side of the exchange ended.
  expect(strangers, 'decisions of requests with no client address').toEqual([])
  await limiter.close()
  await reader.close()
  await inner.close?.()
}
