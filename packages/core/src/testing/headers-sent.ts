import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { HeaderFormat } from '../http/headers.js'
import { HEADER_FORMATS } from '../http/headers.js'
import { createLimiter } from '../limiter.js'
import type { Limiter } from '../limiter-types.js'
import type { LoopbackServer } from './loopback.js'

/** The adapter options the headers-sent property varies. */
export interface HeadersSentOptions {
  readonly headers: boolean | HeaderFormat
  readonly shadowHeader: boolean
  /** Give an `onRejected` that answers the rejection's status with the body `limited`. */
  readonly customRejection: boolean
}

/**
 * Starts an app whose first middleware answers 200 and flushes the headers, then the adapter's
 * `rateLimit(limiter, options)`, then `GET /` ending the response with `handled`; every error
 * the framework reports is pushed to `errors`. The suite closes it after each run.
 */
export type HeadersSentServe = (
  limiter: Limiter<never>,
  options: HeadersSentOptions,
  errors: unknown[],
) => Promise<LoopbackServer>

/**
 * A property every adapter must hold when an earlier middleware already sent the headers: each
 * request is still decided, no rate-limit header is written, nothing throws, and the handler
 * runs only for the requests allowed, whatever the header options and the rejection handler.
 *
 * @param name - the adapter, for the test titles
 */
export function describeHeadersAlreadySent(name: string, serve: HeadersSentServe): void {
  describe(`${name}: headers already sent by an earlier middleware`, () => {
    it('decides every request, writes no header, never throws, and runs the handler only when allowed', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom<boolean | HeaderFormat>(true, false, ...HEADER_FORMATS),
          fc.boolean(),
          fc.boolean(),
          fc.integer({ min: 1, max: 3 }),
          async (headers, shadowHeader, customRejection, limit) => {
            const limiter = createLimiter({
              rules: [
                { id: 'per-ip', limit, window: '1m' },
                { id: 'trial', limit: 1, window: '1m', shadow: true },
              ],
            })
            const errors: unknown[] = []
            const server = await serve(limiter, { headers, shadowHeader, customRejection }, errors)
            try {
              for (let i = 1; i <= limit + 1; i++) {
                const r = await fetch(`${server.url}/`, { signal: AbortSignal.timeout(2000) })
                expect(r.status).toBe(200)
                expect(r.headers.get('ratelimit')).toBeNull()
                expect(r.headers.get('retry-after')).toBeNull()
                expect((await r.text()) === 'handled').toBe(i <= limit)
              }
            } finally {
              await server.close()
            }
            expect(errors).toEqual([])
            expect(limiter.counters().total.rejected).toBe(1)
          },
        ),
        { numRuns: 30 },
      )
    })
  })
}
