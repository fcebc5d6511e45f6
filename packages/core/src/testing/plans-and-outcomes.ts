import type { ServerResponse } from 'node:http'
import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { AlgorithmResult } from '../algorithms/algorithm.js'
import { createLimiter } from '../limiter.js'
import type { Limiter } from '../limiter-types.js'
import type { Logger } from '../logger.js'
import type { RuleInput } from '../rules/schema.js'
import { MemoryStore } from '../stores/memory-store.js'
import type { ConsumeEntry, RefundEntry, Store } from '../stores/store.js'

/** Adapter options the plan and outcome cases set. */
export interface OutcomeServeOptions {
  readonly requestWasSuccessful?: ((req: unknown, res: ServerResponse) => boolean) | undefined
  readonly skip?: ((req: unknown) => boolean) | undefined
  readonly logger?: Logger | undefined
}

/**
 * Starts the adapter's server with `limiter` mounted app-wide and three routes:
 *
 * - `GET /items` answers 200;
 * - `POST /login` answers the status named by the request's `x-status` header (default 200);
 * - `GET /hang` never answers: it waits until the client goes away.
 *
 * Resolves with the server's base URL (`http://127.0.0.1:port`); the suite closes it after each
 * case with the returned `close`.
 */
export type OutcomeServe = (
  limiter: Limiter<never>,
  options: OutcomeServeOptions,
) => Promise<{ readonly url: string; readonly close: () => Promise<void> }>

/** A MemoryStore that records each refund it is asked for. */
class RecordingStore implements Store {
  readonly synchronous = true
  private readonly memory = new MemoryStore()
  readonly refunds: string[][] = []
  consume(entries: readonly ConsumeEntry[], nowMs: number): readonly AlgorithmResult[] {
    return this.memory.consume(entries, nowMs)
  }
  refund(entries: readonly RefundEntry[], nowMs: number): void {
    this.refunds.push(entries.map((e) => e.rule.rule.id))
    this.memory.refund(entries, nowMs)
  }
  retain(ids: ReadonlySet<string>): void {
    this.memory.retain(ids)
  }
}

/**
 * The per-plan limit and count-by-outcome cases every adapter must pass through its real
 * framework over real HTTP: tiers chosen by a header, failed logins counted and successful
 * ones given back, a custom `requestWasSuccessful`, a `skip` that throws or answers a non-boolean, and a client that
 * disconnects before the response (a failure: refunded by a rule that counts successes, exactly
 * once, and kept by one that counts failures).
 *
 * @param name - the adapter, for the test titles
 * @param serve - starts the adapter's server for one case
 */
export function describePlansAndOutcomes(name: string, serve: OutcomeServe): void {
  describe(`${name}: per-plan limits and counting by outcome`, () => {
    const closers: Array<() => Promise<void>> = []
    afterEach(async () => {
      await Promise.all(closers.splice(0).map((close) => close()))
    })

    async function start(rules: RuleInput[], options: OutcomeServeOptions = {}) {
      const store = new RecordingStore()
      const limiter = createLimiter<never>({ rules, store })
      const { url, close } = await serve(limiter, options)
      closers.push(async () => {
        await close()
        await limiter.close()
      })
      return { url, store, limiter }
    }

    const login = (url: string, status: number) =>
      fetch(`${url}/login`, { method: 'POST', headers: { 'x-status': String(status) } })

    it('gives each plan its own limit, named in RateLimit-Policy', async () => {
      const { url } = await start([
        {
          id: 'plan',
          window: '1m',
          tiers: {
            by: 'header:x-plan',
            values: { free: { limit: 1 }, pro: { limit: 3 } },
            default: 'free',
          },
        },
      ])
      const as = (plan: string) => fetch(`${url}/items`, { headers: { 'x-plan': plan } })
      const pro = await as('pro')
      expect(pro.headers.get('ratelimit-policy')).toBe('"plan";q=3;w=60')
      expect((await as('pro')).status).toBe(200)
      expect((await as('pro')).status).toBe(200)
      expect((await as('pro')).status).toBe(429)
      // Downgraded to free: the free allowance, not what pro had.
      const free = await as('free')
      expect(free.status).toBe(200)
      expect(free.headers.get('ratelimit-policy')).toBe('"plan";q=1;w=60')
      expect((await as('free')).status).toBe(429)
    })

    it("count: 'failed' keeps failed logins counted and gives successful ones back", async () => {
      const { url, store } = await start([
        { id: 'login', match: 'POST /login', limit: 2, window: '15m', count: 'failed' },
      ])
      for (let i = 0; i < 4; i++) expect((await login(url, 200)).status).toBe(200)
      expect((await login(url, 401)).status).toBe(401)
      expect((await login(url, 401)).status).toBe(401)
      const refused = await login(url, 200)
      expect(refused.status).toBe(429)
      expect(refused.headers.get('retry-after')).not.toBeNull()
      // One refund per successful login, each through the store once.
      await vi.waitFor(() => expect(store.refunds).toEqual(Array(4).fill(['login'])))
    })

    it('requestWasSuccessful decides what a success is', async () => {
      const { url } = await start(
        [{ id: 'login', match: 'POST /login', limit: 1, window: '15m', count: 'failed' }],
        { requestWasSuccessful: (_req, res) => res.statusCode !== 401 },
      )
      // A 404 is not a failed login here: given back.
      for (let i = 0; i < 3; i++) expect((await login(url, 404)).status).toBe(404)
      expect((await login(url, 401)).status).toBe(401)
      expect((await login(url, 200)).status).toBe(429)
    })

    it('a skip that throws checks the request, answers no 5xx, and warns once', async () => {
      const warnings: unknown[] = []
      const { url } = await start([{ id: 'items', match: '/items', limit: 1, window: '1m' }], {
        skip: () => {
          throw new Error('skip exploded')
        },
        logger: { debug() {}, info() {}, warn: (o) => void warnings.push(o), error() {} },
      })
      expect((await fetch(`${url}/items`)).status).toBe(200)
      // Checked, not skipped: the second request is over the limit.
      expect((await fetch(`${url}/items`)).status).toBe(429)
      expect(warnings).toEqual([expect.objectContaining({ code: 'FG_WRN_SKIP_INVALID' })])
    })

    it('only a skip that answers true skips: a promise (an async skip) or any other non-boolean checks the request and warns', async () => {
      const warnings: Array<{ code?: string }> = []
      let answer: unknown
      let client = 0
      const PROMISE = Symbol('a promise')
      const { url } = await start(
        [{ id: 'items', match: '/items', key: 'header:x-client', limit: 1, window: '1m' }],
        {
          // A promise is made per call; a rejected one must not surface as unhandled.
          skip: () =>
            (answer === PROMISE ? Promise.reject(new Error('async skip')) : answer) as boolean,
          logger: { debug() {}, info() {}, warn: (o) => void warnings.push(o), error() {} },
        },
      )
      const twice = async () => {
        const headers = { 'x-client': String(++client) }
        const first = await fetch(`${url}/items`, { headers })
        const second = await fetch(`${url}/items`, { headers })
        return [first.status, second.status]
      }
      const notBoolean = fc.oneof(
        fc.constant(PROMISE),
        fc.anything().filter((v) => typeof v !== 'boolean' && v !== undefined),
      )
      await fc.assert(
        fc.asyncProperty(notBoolean, async (value) => {
          answer = value
          expect(await twice()).toEqual([200, 429])
        }),
        { numRuns: 25 },
      )
      expect(warnings.map((w) => w.code)).toContain('FG_WRN_SKIP_INVALID')
      // A boolean or a skip that answers nothing are not mistakes.
      answer = true
      expect(await twice()).toEqual([200, 200])
      answer = undefined
      expect(await twice()).toEqual([200, 429])
    })

    it('a client that disconnects before the response failed: refunded once where only successes count, kept where failures do', async () => {
      const { url, store, limiter } = await start([
        { id: 'inflight', match: '/hang', algorithm: 'concurrency', limit: 10 },
        { id: 'ok-only', match: '/hang', limit: 1, window: '1m', count: 'successful' },
        { id: 'failed-only', match: '/hang', limit: 2, window: '1m', count: 'failed' },
      ])
      const hang = async (): Promise<void> => {
        const before = limiter.counters().total.allowed
        const aborter = new AbortController()
        const pending = fetch(`${url}/hang`, { signal: aborter.signal }).catch(() => undefined)
        await vi.waitFor(() => expect(limiter.counters().total.allowed).toBe(before + 1))
        aborter.abort()
        await pending
      }
      await hang()
      // The slot and the successes-only unit come back in one refund; the failure stays counted.
      await vi.waitFor(() => expect(store.refunds).toEqual([['inflight', 'ok-only']]))
      await hang()
      await vi.waitFor(() => expect(store.refunds).toHaveLength(2))
      expect(store.refunds[1]).toEqual(['inflight', 'ok-only'])
      // Two aborted requests counted as failures: the third is refused.
      const refused = await fetch(`${url}/hang`)
      expect(refused.status).toBe(429)
      expect(store.refunds).toHaveLength(2)
    })
  })
}
