import { describe, expect, it } from 'vitest'
import { rateLimit } from '@floodgate/fastify'
import Fastify, { type FastifyInstance } from 'fastify'
import { baseUrl, coveredSnippets, docsHarness, readDoc, where } from '@floodgate/docs-snippets'

// Every ```ts block of docs/getting-started-fastify.md runs here, through real HTTP, and the
// test checks what the page says about it. Fragments run after the setup they take for
// granted (`before`), and export the app they built (`after`).
const page = 'getting-started-fastify.md'
const [registerFirst, options] = coveredSnippets(page, 2)
const { runner, ports, itTypeChecks } = docsHarness(new URL('..', import.meta.url))

describe(`docs/${page}`, () => {
  it(`${where(registerFirst!)}: route cost, an exempt route, and the headers`, async () => {
    const { app } = await runner.run(registerFirst!, {
      // The page's `createReport` handler.
      before: 'const createReport = async () => ({ created: true })',
      after: 'export { app }',
    })
    try {
      const base = await ports().url()
      const user = await fetch(`${base}/users/42`)
      expect(await user.json()).toEqual({ id: '42' })
      expect(user.headers.get('ratelimit-policy')).toBe('"per-ip";q=100;w=60')
      expect(user.headers.get('ratelimit')).toBe('"per-ip";r=99;t=1')

      const report = await fetch(`${base}/reports`, { method: 'POST' })
      expect(await report.json()).toEqual({ created: true })
      expect(report.headers.get('ratelimit')).toBe('"per-ip";r=89;t=7')

      const health = await fetch(`${base}/health`)
      expect(await health.json()).toEqual({ ok: true })
      expect(health.headers.get('ratelimit')).toBeNull()
    } finally {
      await (app as FastifyInstance).close()
    }
  })

  it('a refusal is the problem+json body the page lists', async () => {
    const app = Fastify()
    await app.register(rateLimit, { rules: [{ id: 'per-ip', limit: 1, window: '1m' }] })
    app.get('/', () => ({ ok: true }))
    try {
      await app.listen({ port: 0, host: '127.0.0.1' })
      const base = baseUrl(app.server)
      expect((await fetch(base)).status).toBe(200)
      const refused = await fetch(base)
      expect(refused.status).toBe(429)
      expect(refused.headers.get('retry-after')).toBe('60')
      expect(refused.headers.get('content-type')).toBe('application/problem+json; charset=utf-8')
      expect(Object.keys((await refused.json()) as object)).toEqual([
        'type',
        'title',
        'status',
        'detail',
        'violated-policies',
        'retryAfter',
      ])
      expect(readDoc(page)).toContain(
        '`application/problem+json; charset=utf-8` body `{type, title, status, detail, violated-policies, retryAfter}`',
      )
    } finally {
      await app.close()
    }
  })

  it('a bad route config throws when the route is declared, with the message shown', async () => {
    const message =
      'route POST /reports: config.rateLimit.cost: expected a positive number or a function, got -2'
    expect(readDoc(page).replace(/\s+/g, ' ')).toContain(`(\`${message}\`)`)
    const app = Fastify()
    await app.register(rateLimit, { rules: [{ id: 'per-ip', limit: 100, window: '1m' }] })
    try {
      expect(() =>
        app.post('/reports', { config: { rateLimit: { cost: -2 } } }, () => ({})),
      ).toThrow(message)
    } finally {
      await app.close()
    }
  })

  it(`${where(options!)}: keys.user and onRejected`, async () => {
    const { app } = await runner.run(options!, {
      before: `
import Fastify from 'fastify'
import { rateLimit } from '@floodgate/fastify'
const app = Fastify()
const rules = [{ id: 'per-user', key: 'user' as const, limit: 1, window: '1m' }]
// The authentication the page assumes: an onRequest hook, registered before the plugin,
// and its declaration of request.user.
declare module 'fastify' {
  interface FastifyRequest {
    user?: { id: string }
  }
}
app.decorateRequest('user', undefined)
app.addHook('onRequest', async (request) => {
  request.user = { id: String(request.headers['x-user-id']) }
})`,
      after: `
app.get('/', async () => ({ ok: true }))
export { app }`,
    })
    const fastify = app as FastifyInstance
    try {
      await fastify.listen({ port: 0, host: '127.0.0.1' })
      const base = baseUrl(fastify.server)
      const as = (user: string) => ({ headers: { 'x-user-id': user } })
      expect((await fetch(base, as('ann'))).status).toBe(200)
      const refused = await fetch(base, as('ann'))
      expect(refused.status).toBe(429)
      expect(await refused.json()).toEqual({
        error: 'Rate limit exceeded (per-user); retry in 60 s.',
        retryAfter: 60,
      })
      expect((await fetch(base, as('bob'))).status).toBe(200)
    } finally {
      await fastify.close()
    }
  })

  itTypeChecks()
})
