import { Agent, request } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { createLimiter } from '../limiter.js'
import type { Limiter } from '../limiter-types.js'

/**
 * Starts the adapter's server with `limiter` mounted app-wide and one route, `GET /work`, whose
 * handler awaits `work()` and then answers 200 `ok`. Resolves with the base URL
 * (`http://127.0.0.1:port`) and a `close`.
 */
export type AdaptiveServe = (
  limiter: Limiter<never>,
  work: () => Promise<void>,
) => Promise<{ readonly url: string; readonly close: () => Promise<void> }>

interface Reply {
  readonly status: number
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  readonly body: string
}

function get(agent: Agent, url: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/work`, { agent }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

// The service: 100 ms per request while it holds at most 4, then in proportion to what it
// holds. Against a 250 ms target, the right limit is 10 in flight; 20 clients want 20.
const BASE_MS = 100
const CAPACITY = 4
const TARGET_MS = 250
const CLIENTS = 20
const RETRY_MS = 250
const DURATION_MS = 15_000
const WINDOW_MS = 1000
/** How long the server may take to settle between two virtual steps before the case fails. */
const SETTLE_LIMIT_MS = 10_000

/**
 * The adaptive rule over real HTTP, through the adapter and its framework: a handler whose
 * latency grows with the requests in flight, twenty clients that want twice what the service
 * can take at the target. Time is virtual (the limiter's injected clock): the case moves it from
 * one completion or retry to the next once every request sent has either reached the handler or
 * been answered, so it asserts behaviour (p99 near the target, 503 with Retry-After and a
 * problem+json body, the limit found) however loaded the machine is.
 *
 * @param name - the adapter, for the test titles
 * @param serve - starts the adapter's server for the case
 */
export function describeAdaptiveShedding(name: string, serve: AdaptiveServe): void {
  describe(`${name}: adaptive rule over HTTP`, () => {
    const closers: Array<() => Promise<void>> = []
    afterEach(async () => {
      for (const close of closers.splice(0)) await close()
    })

    it('keeps p99 near the target and sheds the excess with 503, Retry-After and problem+json', async () => {
      let now = 0
      const limiter = createLimiter({
        clock: () => now,
        rules: [
          {
            id: 'shed',
            algorithm: 'adaptive',
            adaptive: {
              target: `${TARGET_MS}ms`,
              window: WINDOW_MS,
              initialLimit: 20,
              maxLimit: 100,
              minSamples: 10,
              reserve: 0,
            },
          },
        ],
      })
      interface Job {
        readonly at: number
        readonly run: () => void
      }
      const inService: Job[] = []
      const timers: Job[] = []
      const work = (): Promise<void> =>
        new Promise<void>((resolve) => {
          const held = inService.length + 1
          inService.push({ at: now + BASE_MS * Math.max(1, held / CAPACITY), run: resolve })
        })
      const app = await serve(limiter, work)
      closers.push(app.close)
      const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS })
      closers.push(() => Promise.resolve(agent.destroy()))

      let pending = 0
      let failure: unknown
      const latencies: { at: number; ms: number }[] = []
      const refusals: Reply[] = []
      let admitted: Reply | undefined
      const send = (): void => {
        const sentAt = now
        pending++
        get(agent, app.url).then(
          (reply) => {
            pending--
            if (reply.status === 200) {
              latencies.push({ at: now, ms: now - sentAt })
              admitted ??= reply
              timers.push({ at: now, run: send })
            } else {
              refusals.push(reply)
              timers.push({ at: now + RETRY_MS, run: send })
            }
          },
          (err: unknown) => {
            pending--
            failure = err
          },
        )
      }
      for (let i = 0; i < CLIENTS; i++) timers.push({ at: 0, run: send })

      // Settled: every request sent is in the handler or answered, and the limiter has seen
      // each answered request end.
      const settled = (): boolean =>
        pending === inService.length &&
        (limiter.adaptive('shed')?.inFlight ?? 0) === inService.length
      const settle = async (): Promise<void> => {
        const started = Date.now()
        while (!settled() && failure === undefined) {
          if (Date.now() - started > SETTLE_LIMIT_MS) throw new Error('the server did not settle')
          await new Promise((r) => setImmediate(r))
        }
        if (failure !== undefined) throw failure as Error
      }
      const limits: { at: number; limit: number }[] = []
      let nextRecord = WINDOW_MS
      // Bounded: at most this many virtual steps.
      for (let step = 0; step < 100_000; step++) {
        await settle()
        const all = [
          ...inService.map((j) => ({ j, list: inService })),
          ...timers.map((j) => ({ j, list: timers })),
        ]
        if (all.length === 0) break
        // Completions first at equal times: a slot frees before the next request asks for it.
        const next = all.reduce((a, b) =>
          b.j.at < a.j.at || (b.j.at === a.j.at && b.list === inService && a.list !== inService)
            ? b
            : a,
        )
        if (next.j.at > DURATION_MS) break
        while (nextRecord <= next.j.at) {
          now = nextRecord
          limits.push({ at: now, limit: limiter.adaptive('shed')!.limit })
          nextRecord += WINDOW_MS
        }
        now = next.j.at
        next.list.splice(next.list.indexOf(next.j), 1)
        next.j.run()
      }
      // Let the requests still in the handler finish, so the servers close cleanly.
      for (const j of inService.splice(0)) j.run()

      // The limit found: 10 in flight (±2) once settled.
      for (const l of limits.filter((x) => x.at >= 6000)) {
        expect(l.limit).toBeGreaterThanOrEqual(8)
        expect(l.limit).toBeLessThanOrEqual(12)
      }
      // p99 of each settled window within 15% of the target (without the limiter: 500 ms).
      for (let w = 6; w < DURATION_MS / WINDOW_MS; w++) {
        const ms = latencies
          .filter((l) => l.at > w * WINDOW_MS && l.at <= (w + 1) * WINDOW_MS)
          .map((l) => l.ms)
          .sort((a, b) => a - b)
        expect(ms.length).toBeGreaterThan(10)
        const p99 = ms[Math.ceil(ms.length * 0.99) - 1]!
        expect(p99).toBeLessThanOrEqual(TARGET_MS * 1.15)
      }
      // Shed with 503, Retry-After, the RateLimit fields and a problem+json body.
      expect(refusals.length).toBeGreaterThan(100)
      const r = refusals.at(-1)!
      expect(r.status).toBe(503)
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      expect(r.headers['ratelimit-policy']).toMatch(/^"shed";q=\d+$/)
      expect(r.headers['content-type']).toMatch(/^application\/problem\+json/)
      expect(JSON.parse(r.body)).toMatchObject({ status: 503, 'violated-policies': ['shed'] })
      expect(admitted!.headers['ratelimit']).toMatch(/^"shed";r=\d+;t=0$/)
      expect(limiter.counters().byRule.get('shed')!.rejected).toBe(refusals.length)
    }, 120_000)
  })
}
