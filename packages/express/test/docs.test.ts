import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { rateLimit } from '@floodgate/express'
import express, { type Express } from 'express'
import { coveredSnippets, docsHarness, docSnippets, readDoc, where } from '@floodgate/docs-snippets'

// Every ```ts block of docs/getting-started-express.md runs here, through real HTTP, and the
// test checks what the page says about it. Fragments run after the setup they take for
// granted (`before`), and export the app they built (`after`).
const page = 'getting-started-express.md'
const [appWide, options, trustProxy, routeMount, costFunction] = coveredSnippets(page, 5)
const { runner, ports, itTypeChecks } = docsHarness(new URL('..', import.meta.url))

const setup = `
import express from 'express'
import { createLimiter } from '@floodgate/core'
import { rateLimit } from '@floodgate/express'
const app = express()
`

/** Serve the app a fragment built (FreePorts records the server and closes it after the test). */
async function serve(app: Express): Promise<string> {
  const server: Server = app.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe(`docs/${page}`, () => {
  it(`${where(appWide!)}: an app-wide limit, and the headers clients see`, async () => {
    await runner.run(appWide!)
    const res = await fetch(`${await ports().url()}/`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ hello: 'world' })
    expect(res.headers.get('ratelimit-policy')).toBe('"per-ip";q=100;w=60')
    expect(res.headers.get('ratelimit')).toBe('"per-ip";r=99;t=1')
    // As the page's "What clients see" table says.
    expect(readDoc(page)).toContain(
      '`RateLimit-Policy: "per-ip";q=100;w=60` and `RateLimit: "per-ip";r=99;t=1`',
    )
  })

  it('a bad rule throws at startup, naming the field', () => {
    expect(readDoc(page)).toContain('(`rules[0].limit: expected a positive integer, got -1`)')
    expect(() => rateLimit([{ id: 'per-ip', limit: -1, window: '1m' }])).toThrow(
      'rules[0].limit: expected a positive integer, got -1',
    )
  })

  it('the onLimit forms of the table are valid rules', () => {
    for (const onLimit of [
      { action: 'reject', status: 503 },
      { action: 'queue', maxWait: '2s' },
      'drop',
    ] as const)
      expect(() => rateLimit([{ id: 'per-ip', limit: 100, window: '1m', onLimit }])).not.toThrow()
  })

  it('the rejection body is the one shown', async () => {
    const [shown] = docSnippets(page, ['json'])
    // A bucket of one that refills in 42 s gives the page's numbers.
    const limited = express()
    limited.use(rateLimit([{ id: 'per-ip', limit: 1, window: '42s' }]))
    limited.get('/', (_req, res) => res.json({ ok: true }))
    const base = await serve(limited)
    expect((await fetch(base)).status).toBe(200)
    const res = await fetch(base)
    expect(res.status).toBe(429)
    expect(res.headers.get('content-type')).toBe('application/problem+json; charset=utf-8')
    expect(res.headers.get('retry-after')).toBe('42')
    expect(await res.json()).toStrictEqual(JSON.parse(shown!.code))
  })

  it(`${where(options!)}: keys.user, skip and onRejected`, async () => {
    const { app } = await runner.run(options!, {
      before: `${setup}
const rules = [{ id: 'per-user', key: 'user' as const, limit: 1, window: '1m' }]
// The page's fragment assumes an authentication middleware that sets req.user, and the
// declaration of req.user that comes with it (passport's, say).
declare global {
  namespace Express {
    interface Request {
      user?: { id: string }
    }
  }
}
app.use((req, _res, next) => {
  req.user = { id: req.get('x-user-id') ?? '' }
  next()
})`,
      after: `
app.get('/health', (_req, res) => res.json({ ok: true }))
app.get('/', (_req, res) => res.json({ ok: true }))
export { app }`,
    })
    const base = await serve(app as Express)
    const as = (user: string) => ({ headers: { 'x-user-id': user } })
    expect((await fetch(`${base}/`, as('ann'))).status).toBe(200)
    const refused = await fetch(`${base}/`, as('ann'))
    expect(refused.status).toBe(429)
    expect(await refused.json()).toEqual({
      error: 'Rate limit exceeded (per-user); retry in 60 s.',
      retryAfter: 60,
    })
    expect((await fetch(`${base}/`, as('bob'))).status).toBe(200)
    // Skipped: never limited, no headers.
    const health = await fetch(`${base}/health`, as('ann'))
    expect(health.status).toBe(200)
    expect(health.headers.get('ratelimit')).toBeNull()
  })

  it(`${where(trustProxy!)}: with one trusted proxy, the client cannot pick its bucket`, async () => {
    const { app } = await runner.run(trustProxy!, {
      before: setup,
      after: `
app.use(rateLimit([{ id: 'per-ip', limit: 1, window: '1m' }]))
app.get('/', (req, res) => res.json({ ip: req.ip }))
export { app }`,
    })
    const base = await serve(app as Express)
    // The proxy appends the address it saw; the client wrote whatever it liked before it.
    const via = (forged: string) => ({ headers: { 'x-forwarded-for': `${forged}, 192.0.2.7` } })
    const first = await fetch(`${base}/`, via('10.0.0.1'))
    expect(await first.json()).toEqual({ ip: '192.0.2.7' })
    expect((await fetch(`${base}/`, via('10.0.0.2'))).status).toBe(429)
  })

  it(`${where(routeMount!)}: the route mount charges its cost once`, async () => {
    const { app } = await runner.run(routeMount!, {
      before: `${setup}
const exportHandler: express.RequestHandler = (_req, res) => {
  res.json({ exported: true })
}`,
      after: `
app.get('/', (_req, res) => res.json({ ok: true }))
export { app }`,
    })
    const base = await serve(app as Express)
    const exported = await fetch(`${base}/export`, { method: 'POST' })
    expect(await exported.json()).toEqual({ exported: true })
    expect(exported.headers.get('ratelimit')).toBe('"per-ip";r=90;t=6')
    expect((await fetch(`${base}/`)).headers.get('ratelimit')).toBe('"per-ip";r=89;t=7')
  })

  it(`${where(costFunction!)}: a cost function on the app-wide mount`, async () => {
    const { app } = await runner.run(costFunction!, {
      before: `${setup}
const rules = [{ id: 'per-ip', limit: 100, window: '1m' }]`,
      after: `
app.post('/export', (_req, res) => res.json({ exported: true }))
app.get('/', (_req, res) => res.json({ ok: true }))
export { app }`,
    })
    const base = await serve(app as Express)
    expect((await fetch(`${base}/export`, { method: 'POST' })).headers.get('ratelimit')).toBe(
      '"per-ip";r=90;t=6',
    )
    expect((await fetch(`${base}/`)).headers.get('ratelimit')).toBe('"per-ip";r=89;t=7')
  })

  itTypeChecks()
})
