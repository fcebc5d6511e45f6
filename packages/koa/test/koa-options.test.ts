import { createServer } from 'node:http'
import { createLimiter, type Logger } from '@floodgate/core'
import { rateLimit } from '@floodgate/koa'
import Router from '@koa/router'
import Koa, { type Context } from 'koa'
import request from 'supertest'
import { describe, expect, it, vi } from 'vitest'

const logger = () => {
  const warn = vi.fn<(obj: object, msg?: string) => void>()
  const log: Logger = { debug: vi.fn(), info: vi.fn(), warn, error: vi.fn() }
  return Object.assign(log, { warn })
}

const serve = (app: Koa) => createServer((req, res) => void app.callback()(req, res))

describe('koa rateLimit options', () => {
  it('warns once when app.proxy trusts the leftmost X-Forwarded-For (maxIpsCount 0)', async () => {
    const log = logger()
    const app = new Koa()
    app.proxy = true
    app.use(rateLimit([{ id: 'a', limit: 100, window: '1m' }], { logger: log }))
    app.use((ctx) => {
      ctx.body = 'ok'
    })
    const agent = request(serve(app))
    await agent.get('/')
    await agent.get('/')
    const calls = log.warn.mock.calls.filter(
      (c) => (c[0] as { code?: string }).code === 'FG_WRN_KOA_PROXY_LEFTMOST_IP',
    )
    expect(calls).toHaveLength(1)
  })

  it('does not warn with maxIpsCount set, and then keys by the proxy-appended address', async () => {
    const log = logger()
    const app = new Koa()
    app.proxy = true
    app.maxIpsCount = 1
    app.use(rateLimit([{ id: 'a', limit: 1, window: '1m' }], { logger: log }))
    app.use((ctx) => {
      ctx.body = 'ok'
    })
    const agent = request(serve(app))
    // The client prepends random entries; the proxy appended the real address last.
    expect((await agent.get('/').set('x-forwarded-for', 'spoof-1, 203.0.113.9')).status).toBe(200)
    expect((await agent.get('/').set('x-forwarded-for', 'spoof-2, 203.0.113.9')).status).toBe(429)
    expect(log.warn).not.toHaveBeenCalled()
  })

  it('uses the @koa/router pattern on a route mount, and charges once across two mounts', async () => {
    const log = logger()
    const limiter = createLimiter<Context>({
      rules: [{ id: 'users', match: 'GET /users/:id', limit: 2, window: '1m' }],
    })
    const app = new Koa()
    app.use(rateLimit(limiter, { logger: log }))
    const router = new Router()
    router.get('/users/:id', rateLimit(limiter, { logger: log }), (ctx) => {
      ctx.body = 'ok'
    })
    app.use(router.routes())
    const agent = request(serve(app))
    // App-level: no route known, but the path matches the pattern; the route mount is skipped.
    expect((await agent.get('/users/1')).headers['ratelimit']).toMatch(/^"users";r=1;/)
    expect((await agent.get('/users/2')).status).toBe(200)
    expect((await agent.get('/users/3')).status).toBe(429)
    expect(log.warn.mock.calls[0]?.[0]).toMatchObject({ code: 'FG_WRN_DOUBLE_MOUNT' })
  })

  it('calls onRejected', async () => {
    const app = new Koa()
    app.use(
      rateLimit([{ id: 'a', limit: 1, window: '1m' }], {
        onRejected: (ctx, { status }) => {
          ctx.status = status
          ctx.body = { custom: true }
        },
      }),
    )
    app.use((ctx) => {
      ctx.body = 'ok'
    })
    const agent = request(serve(app))
    await agent.get('/')
    const r = await agent.get('/')
    expect(r.status).toBe(429)
    expect(r.body).toStrictEqual({ custom: true })
    expect(r.headers['retry-after']).toBe('60')
  })

  it('still calls a handler given as onLimited, its old name, and says so once', async () => {
    const log = logger()
    const app = new Koa()
    app.use(
      rateLimit([{ id: 'a', limit: 1, window: '1m' }], {
        logger: log,
        onLimited: (ctx, { status }) => {
          ctx.status = status
          ctx.body = { old: true }
        },
      }),
    )
    app.use((ctx) => {
      ctx.body = 'ok'
    })
    const agent = request(serve(app))
    await agent.get('/')
    expect((await agent.get('/')).body).toStrictEqual({ old: true })
    const renamed = log.warn.mock.calls.filter(
      ([obj]) => (obj as { code?: string }).code === 'FG_WRN_OPTION_RENAMED',
    )
    expect(renamed).toHaveLength(1)
    expect(renamed[0]![1]).toContain('the option onLimited is now called onRejected')
  })
})
