import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer } from 'node:http'
import { createLimiter } from '@floodgate/core'
import { listenOnLoopback } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/koa'
import fc from 'fast-check'
import Koa, { type Context } from 'koa'
import { describe, expect, it } from 'vitest'
import { KoaFacts } from '../src/facts.js'
import { koaIpCache } from '../src/ip-cache.js'

// KoaFacts reads Koa's cached address (or the socket's) itself when the app has no proxy; the
// reference is Koa's own `ctx.request.ip`, read after the facts so that it cannot fill the cache
// first.

const address = fc.constantFrom('192.0.2.10', '2001:db8::1', '::ffff:192.0.2.11', '', undefined)
const forwarded = fc.option(
  fc.array(fc.constantFrom('198.51.100.1', '198.51.100.2', ' 203.0.113.5', 'junk', ''), {
    minLength: 1,
    maxLength: 3,
  }),
  { nil: undefined },
)

function context(
  app: Koa,
  remoteAddress: string | undefined,
  xff: readonly string[] | undefined,
): Context {
  const headers: Record<string, string> = { host: 'example.test' }
  if (xff !== undefined) headers['x-forwarded-for'] = xff.join(',')
  const req = { url: '/', method: 'GET', headers, socket: { remoteAddress } }
  return app.createContext(req as unknown as IncomingMessage, {} as ServerResponse)
}

describe('KoaFacts.ip', () => {
  it('answers what Koa answers for ctx.request.ip (property)', () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.nat(3),
        address,
        forwarded,
        fc.option(fc.constantFrom('203.0.113.77', '2001:db8::77', ''), { nil: undefined }),
        fc.boolean(),
        (proxy, maxIpsCount, remote, xff, preset, readTwice) => {
          const app = new Koa()
          app.proxy = proxy
          app.maxIpsCount = maxIpsCount
          const ctx = context(app, remote, xff)
          // An earlier middleware may set the address (Koa's setter keeps it in its cache).
          if (preset !== undefined) ctx.request.ip = preset
          const facts = new KoaFacts(ctx, undefined, koaIpCache(app))
          const ours = facts.ip
          // The client leaves: Node's socket no longer tells its address.
          if (readTwice) (ctx.req.socket as { remoteAddress?: string }).remoteAddress = undefined
          const again = readTwice ? facts.ip : ours
          expect(ours).toBe(ctx.request.ip)
          expect(again).toBe(ours)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('finds where Koa keeps the address, and reads Koa\u2019s getter when an app redefines ip', () => {
    expect(typeof koaIpCache(new Koa())).toBe('symbol')
    const redefined = new Koa()
    Object.defineProperty(redefined.request, 'ip', {
      get(this: { req: IncomingMessage }) {
        return String(this.req.headers['cf-connecting-ip'] ?? 'none')
      },
      configurable: true,
    })
    expect(koaIpCache(redefined)).toBeUndefined()
    const ctx = context(redefined, '192.0.2.10', undefined)
    ctx.req.headers['cf-connecting-ip'] = '203.0.113.8'
    expect(new KoaFacts(ctx, undefined, koaIpCache(redefined)).ip).toBe('203.0.113.8')
  })
})

describe('rateLimit keys by the address Koa resolves, without a proxy', () => {
  it('honours an address an earlier middleware set with ctx.request.ip', async () => {
    const app = new Koa()
    app.use(async (ctx, next) => {
      const who = ctx.get('x-test-client')
      if (who !== '') ctx.request.ip = who
      await next()
    })
    const limiter = createLimiter<Context>({ rules: [{ id: 'per-ip', limit: 1, window: '1m' }] })
    app.use(rateLimit(limiter, { warnings: false }))
    app.use((ctx) => {
      ctx.body = 'ok'
    })
    const server = await listenOnLoopback(createServer((req, res) => void app.callback()(req, res)))
    try {
      const get = (who?: string) =>
        fetch(server.url, { headers: who === undefined ? {} : { 'x-test-client': who } }).then(
          (r) => r.status,
        )
      // Each address set by the middleware is its own client; the socket's is another.
      expect(await get('203.0.113.1')).toBe(200)
      expect(await get('203.0.113.2')).toBe(200)
      expect(await get('203.0.113.1')).toBe(429)
      expect(await get()).toBe(200)
      expect(await get()).toBe(429)
      // X-Forwarded-For does not count without app.proxy.
      const spoofed = await fetch(server.url, { headers: { 'x-forwarded-for': '198.51.100.9' } })
      expect(spoofed.status).toBe(429)
    } finally {
      await server.close()
      await limiter.close()
    }
  })
})
