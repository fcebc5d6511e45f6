import { request as httpRequest, type IncomingMessage } from 'node:http'
import { connect, type Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import type { AlgorithmResult } from '../algorithms/algorithm.js'
import { createLimiter } from '../limiter.js'
import { MemoryStore } from '../stores/memory-store.js'
import type { ConsumeEntry, RefundEntry, Store } from '../stores/store.js'
import { adapterScenarios } from './adapter-scenarios.js'
import { DEFAULT_ROUTES } from './scenario-fixtures.js'
import type {
  AdapterHarness,
  AdapterScenario,
  ScenarioExpect,
  ScenarioRequest,
  ScenarioResponse,
} from './scenario-types.js'
import { closesAppAfterEach } from './unhandled-rejections.js'

/** Wraps a store to report refunds and decisions, so steps can wait for them without sleeping. */
class ObservedStore implements Store {
  refunds = 0
  consumes = 0
  private waiters: Array<() => void> = []
  private holding = false
  private held: Array<() => void> = []

  // The operations on one client, passed through when the wrapped store has them.
  readonly peek?: Store['peek']
  readonly reset?: Store['reset']
  readonly penalize?: Store['penalize']
  readonly recordLimits?: Store['recordLimits']
  readonly recordedLimits?: Store['recordedLimits']

  constructor(private readonly inner: Store) {
    if (inner.peek) this.peek = inner.peek.bind(inner)
    if (inner.reset) this.reset = inner.reset.bind(inner)
    if (inner.penalize) this.penalize = inner.penalize.bind(inner)
    if (inner.recordLimits) this.recordLimits = inner.recordLimits.bind(inner)
    if (inner.recordedLimits) this.recordedLimits = inner.recordedLimits.bind(inner)
  }

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

/** Open one connection and write these requests on it back to back (HTTP/1.1 pipelining). */
async function pipelined(url: string, requests: readonly ScenarioRequest[]): Promise<Socket> {
  const { hostname, port } = new URL(url)
  const socket = connect(Number(port), hostname)
  socket.on('error', () => {})
  await new Promise<void>((resolve) => socket.once('connect', resolve))
  let bytes = ''
  for (const r of requests) {
    const headers = Object.entries(r.headers ?? {})
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('')
    bytes += `${r.method} ${r.path} HTTP/1.1\r\nHost: ${hostname}\r\n${headers}Content-Length: 0\r\n\r\n`
  }
  socket.write(bytes)
  return socket
}

/**
 * Resolves with the number of responses the server wrote on `socket` before closing it, or
 * fails when it is still open after `ms`.
 */
function answersBeforeClose(socket: Socket, ms: number, what: string): Promise<number> {
  let text = ''
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => (text += chunk))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`${what}: the connection was still open after ${ms} ms`))
    }, ms)
    socket.once('close', () => {
      clearTimeout(timer)
      resolve(text.match(/^HTTP\/1\.1 \d{3} /gm)?.length ?? 0)
    })
  })
}

/** Resolves once `test()` holds on the store, or fails after `ms`. */
async function within(store: ObservedStore, test: () => boolean, ms: number, what: string) {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)
  })
  try {
    await Promise.race([store.until(test), late])
  } finally {
    clearTimeout(timer)
  }
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
    if (value instanceof RegExp) expect(r.headers[name], `${label}: header ${name}`).toMatch(value)
    else expect(r.headers[name], `${label}: header ${name}`).toBe(value)
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
    const started = closesAppAfterEach()

    for (const scenario of scenarios) {
      it(scenario.name, async () => {
        // On a minute boundary, so fixed windows start with the scenario.
        let now = 1_699_999_980_000
        const custom = (scenario.store ?? 'memory') === 'memory' ? options.makeStore?.() : undefined
        const store = new ObservedStore(custom ?? makeStore(scenario.store))
        const limiter = createLimiter({
          ...scenario.limiter,
          rules: scenario.rules,
          store,
          clock: () => now,
          decisionTimeoutMs: scenario.timeoutMs ?? 10_000,
        })
        let calls = 0
        let openGate: () => void = () => {}
        const gate = new Promise<void>((resolve) => (openGate = resolve))
        let entered: () => void = () => {}
        let enteredOnce = new Promise<void>((resolve) => (entered = resolve))
        // Set by a leaveBeforeLimiter step: the next request is held before the limiter.
        let holdBeforeLimiter: ((req: IncomingMessage) => Promise<void>) | undefined
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
          beforeLimiter: (req) => {
            const hold = holdBeforeLimiter
            holdBeforeLimiter = undefined
            return hold ? hold(req) : Promise.resolve()
          },
        })
        started.app = app
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
          } else if ('abortPipelined' in step) {
            const decided = store.consumes + step.abortPipelined.length
            const refunded = store.refunds + step.refunds
            const socket = await pipelined(app.url, step.abortPipelined)
            await store.until(() => store.consumes >= decided)
            socket.destroy()
            await within(store, () => store.refunds >= refunded, 2000, `${label}: refunds`)
          } else if ('closesPipelined' in step) {
            const socket = await pipelined(app.url, step.closesPipelined)
            const answered = await answersBeforeClose(socket, 2000, label)
            expect(answered, `${label}: responses before the connection closed`).toBe(step.answered)
          } else if ('leaveBeforeLimiter' in step) {
            let arrived: () => void = () => {}
            const arriving = new Promise<void>((resolve) => (arrived = resolve))
            let passed: () => void = () => {}
            const passing = new Promise<void>((resolve) => (passed = resolve))
            holdBeforeLimiter = async (req) => {
              arrived()
              const socket = req.socket
              if (!socket.destroyed) await new Promise((resolve) => socket.once('close', resolve))
              passed()
            }
            const done = rawRequest(app.url, step.leaveBeforeLimiter, (abort) => {
              void arriving.then(abort)
            })
            expect(await done, `${label}: left`).toBe('dropped')
            await passing
            // The limiter acts (and a handler starts) within the microtasks that follow.
            await new Promise((resolve) => setImmediate(resolve))
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
          } else if ('refunds' in step) {
            await store.until(() => store.refunds >= step.refunds)
            // Exactly: a response given back twice (on finish and again on close) shows here.
            expect(store.refunds, `${label}: refunds`).toBe(step.refunds)
          } else if ('act' in step) {
            await step.act(limiter)
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
