import { describe, expect, it } from 'vitest'
import type { HeaderFormat } from '../http/headers.js'

/** The adapter options the CORS cases set. */
export interface CorsServeOptions {
  readonly exposeHeaders?: boolean
  readonly headers?: boolean | HeaderFormat
  readonly shadowHeader?: boolean
}

/**
 * Starts a server with one route `PUT /items` under a `per-ip` rule of limit 1 per minute,
 * behind a CORS middleware shaped like the framework's (`withCors`: it sets
 * `Access-Control-Expose-Headers: X-Request-Id, ratelimit` and answers preflights itself);
 * resolves with the route's URL. The caller closes it after each case.
 */
export type CorsServe = (options: CorsServeOptions, withCors: boolean) => Promise<string>

const origin = { origin: 'https://app.example' }
const preflight = {
  method: 'OPTIONS',
  headers: { ...origin, 'access-control-request-method': 'PUT' },
}

/**
 * The CORS cases every adapter must pass through its real framework: `exposeHeaders` appends
 * the limiter's header names after the CORS middleware's own, on allowed and refused requests;
 * preflights answered before the limiter are not charged.
 *
 * @param name - the adapter, for the test titles
 * @param serve - starts the adapter's server for one case
 */
export function describeCorsExposure(name: string, serve: CorsServe): void {
  describe(`${name}: CORS`, () => {
    it('exposes the limiter headers after the cors names, on allowed and refused requests', async () => {
      const url = await serve({ exposeHeaders: true }, true)
      const ok = await fetch(url, { method: 'PUT', headers: origin })
      expect(ok.status).toBe(200)
      expect(ok.headers.get('access-control-expose-headers')).toBe(
        'X-Request-Id, ratelimit, RateLimit-Policy, Retry-After',
      )
      const refused = await fetch(url, { method: 'PUT', headers: origin })
      expect(refused.status).toBe(429)
      expect(refused.headers.get('access-control-expose-headers')).toBe(
        'X-Request-Id, ratelimit, RateLimit-Policy, Retry-After',
      )
      expect(refused.headers.get('retry-after')).not.toBeNull()
    })

    it('does not charge preflights the cors middleware answers before the limiter', async () => {
      const url = await serve({ exposeHeaders: true }, true)
      for (let i = 0; i < 3; i++) expect((await fetch(url, preflight)).status).toBe(204)
      expect((await fetch(url, { method: 'PUT', headers: origin })).status).toBe(200)
    })

    it('names every header it may send, alone when no cors middleware ran, none when off', async () => {
      const all = await serve({ exposeHeaders: true, headers: 'both', shadowHeader: true }, false)
      expect(
        (await fetch(all, { method: 'PUT' })).headers.get('access-control-expose-headers'),
      ).toBe(
        'RateLimit-Policy, RateLimit, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, Floodgate-Shadow',
      )
      const off = await serve({}, false)
      expect(
        (await fetch(off, { method: 'PUT' })).headers.get('access-control-expose-headers'),
      ).toBeNull()
    })
  })
}
