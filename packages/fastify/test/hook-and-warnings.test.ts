import { Writable } from 'node:stream'
import { createLimiter } from '@floodgate/core'
import { rateLimit } from '@floodgate/fastify'
import Fastify, { type FastifyRequest } from 'fastify'
import { afterEach, describe, expect, it, vi } from 'vitest'

const perUser = [
  { id: 'per-user', key: 'user' as const, limit: 2, window: '1m', fallbackKey: 'skip' as const },
]

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the test's authentication hook. */
    user?: { id: string }
  }
}

/** An app whose preHandler authentication sets request.user from a bearer token. */
async function authApp(hook: 'onRequest' | 'preHandler' | undefined) {
  const app = Fastify()
  app.decorateRequest('user', undefined)
  app.addHook('preHandler', (request, _reply, done) => {
    const token = request.headers.authorization?.replace(/^Bearer /, '')
    if (token) request.user = { id: token }
    done()
  })
  await app.register(rateLimit, {
    rules: perUser,
    keys: { user: (request: FastifyRequest) => request.user?.id },
    ...(hook ? { hook } : {}),
  })
  app.get('/', (request) => ({ user: request.user?.id, rateLimit: request.rateLimit?.remaining }))
  return app
}

describe("fastify: hook: 'preHandler' sees what authentication set", () => {
  it('limits by the user an auth preHandler set, and hands the handler the decision', async () => {
    const app = await authApp('preHandler')
    const send = (token: string) =>
      app.inject({ url: '/', headers: { authorization: `Bearer ${token}` } })
    const a1 = await send('alice')
    expect(a1.statusCode).toBe(200)
    expect(a1.json()).toEqual({ user: 'alice', rateLimit: 1 })
    expect(a1.headers['ratelimit']).toMatch(/^"per-user";r=1;t=\d+$/)
    expect((await send('alice')).statusCode).toBe(200)
    expect((await send('alice')).statusCode).toBe(429)
    // Another user has a quota of their own.
    expect((await send('bob')).json()).toEqual({ user: 'bob', rateLimit: 1 })
    await app.close()
  })

  it("with the default 'onRequest' the user is not known yet: the user rule skips the request", async () => {
    const app = await authApp(undefined)
    for (let i = 0; i < 3; i++) {
      const r = await app.inject({ url: '/', headers: { authorization: 'Bearer alice' } })
      expect(r.statusCode).toBe(200)
      expect(r.headers['ratelimit']).toBeUndefined()
    }
    await app.close()
  })

  it('limits 404s in the chosen hook too, and refuses an unknown hook at startup', async () => {
    const app = Fastify()
    await app.register(rateLimit, {
      rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
      hook: 'preHandler',
    })
    expect((await app.inject({ url: '/missing' })).statusCode).toBe(404)
    expect((await app.inject({ url: '/missing' })).statusCode).toBe(429)
    await app.close()
    const bad = Fastify()
    await expect(
      bad.register(rateLimit, { rules: [], hook: 'onSend' as never }).ready(),
    ).rejects.toThrow(/options\.hook: expected 'onRequest' or 'preHandler', got "onSend"/)
  })
})

/** A Fastify app logging to a buffer, as pino lines. */
function pinoApp(options: { trustProxy?: boolean } = {}) {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n'))
        if (l) lines.push(JSON.parse(l) as Record<string, unknown>)
      done()
    },
  })
  const app = Fastify({ logger: { level: 'warn', stream }, ...options })
  return { app, lines, warnings: () => lines.filter((l) => typeof l['code'] === 'string') }
}

describe('fastify: misconfiguration warnings go through fastify.log (pino)', () => {
  afterEach(() => vi.restoreAllMocks())

  it('X-Forwarded-For with no trusted proxy, and trustProxy: true, each once', async () => {
    const untrusted = pinoApp()
    await untrusted.app.register(rateLimit, { rules: [{ id: 'per-ip', limit: 9, window: '1m' }] })
    untrusted.app.get('/', () => 'ok')
    for (let i = 0; i < 2; i++) {
      await untrusted.app.inject({ url: '/', headers: { 'x-forwarded-for': '198.51.100.7' } })
    }
    expect(untrusted.warnings().map((l) => l['code'])).toEqual(['FG_WRN_FORWARDED_UNTRUSTED'])
    expect(untrusted.warnings()[0]).toMatchObject({ component: 'floodgate', level: 40 })
    await untrusted.app.close()

    const all = pinoApp({ trustProxy: true })
    await all.app.register(rateLimit, { rules: [{ id: 'per-ip', limit: 9, window: '1m' }] })
    all.app.get('/', () => 'ok')
    await all.app.inject({ url: '/' })
    await all.app.inject({ url: '/' })
    expect(all.warnings().map((l) => l['code'])).toEqual(['FG_WRN_TRUST_PROXY_ALL'])
    await all.app.close()
  })

  it("names what to write instead of @fastify/rate-limit's options; warnings: false is silent", async () => {
    const peer = pinoApp()
    await peer.app.register(rateLimit, {
      rules: [],
      max: 100,
      timeWindow: '1 minute',
      keyGenerator: () => 'k',
    } as never)
    await peer.app.ready()
    const messages = peer.warnings().map((l) => String(l['msg']))
    expect(messages).toHaveLength(3)
    expect(messages[0]).toMatch(/options\.max is not a Floodgate option .*; write a rule's limit/)
    await peer.app.close()

    const quiet = pinoApp({ trustProxy: true })
    await quiet.app.register(rateLimit, { rules: [], max: 1, warnings: false } as never)
    quiet.app.get('/', () => 'ok')
    await quiet.app.inject({ url: '/', headers: { 'x-forwarded-for': '198.51.100.7' } })
    expect(quiet.warnings()).toEqual([])
    await quiet.app.close()
  })

  it("with Fastify's logger off, warnings go to stderr", async () => {
    const lines: string[] = []
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: unknown) => {
      if (typeof chunk === 'string' && chunk.startsWith('floodgate: ')) lines.push(chunk)
      return true
    })
    const app = Fastify({ trustProxy: true })
    await app.register(rateLimit, { rules: createLimiter({ rules: [] }) })
    app.get('/', () => 'ok')
    await app.inject({ url: '/' })
    expect(lines).toEqual([
      expect.stringMatching(/trusts every proxy.*\(FG_WRN_TRUST_PROXY_ALL\)\n$/),
    ])
    await app.close()
  })
})
