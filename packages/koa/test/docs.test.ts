import type { Server } from 'node:http'
import { describe, expect, it } from 'vitest'
import type { Logger } from '@floodgate/core'
import { rateLimit } from '@floodgate/koa'
import Koa from 'koa'
import { baseUrl, coveredSnippets, docsHarness, where } from '@floodgate/docs-snippets'

// Every ```ts block of docs/getting-started-koa.md runs here, through real HTTP, and the test
// checks what the page says about it. Fragments run after the setup they take for granted
// (`before`), and export the app they built (`after`).
const page = 'getting-started-koa.md'
const [appWide, routeMount, onRejected, proxy] = coveredSnippets(page, 4)
const { runner, ports, itTypeChecks } = docsHarness(new URL('..', import.meta.url))

const setup = `
import Koa from 'koa'
import Router from '@koa/router'
import { createLimiter } from '@floodgate/core'
import { rateLimit } from '@floodgate/koa'
const app = new Koa()
`

/** Serve the app a fragment built (FreePorts records the server and closes it after the test). */
async function serve(app: Koa): Promise<string> {
  const server: Server = app.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  return baseUrl(server)
}

/** A logger that keeps the codes of the warnings it is given. */
function warningCodes(): { logger: Logger; codes: string[] } {
  const codes: string[] = []
  const ignore = (): void => {}
  const logger: Logger = {
    debug: ignore,
    info: ignore,
    error: ignore,
    warn: (obj: object) => {
      codes.push(String((obj as { code?: unknown }).code))
    },
  }
  return { logger, codes }
}

describe(`docs/${page}`, () => {
  it(`${where(appWide!)}: an app-wide limit in front of @koa/router`, async () => {
    await runner.run(appWide!)
    const res = await fetch(`${await ports().url()}/users/7`)
    expect(await res.json()).toEqual({ id: '7' })
    expect(res.headers.get('ratelimit-policy')).toBe('"per-ip";q=100;w=60')
    expect(res.headers.get('ratelimit')).toBe('"per-ip";r=99;t=1')
  })

  it(`${where(routeMount!)}: the route mount charges 10 units, once`, async () => {
    const { app } = await runner.run(routeMount!, {
      before: `${setup}
const router = new Router()
router.get('/users/:id', (ctx) => {
  ctx.body = { id: ctx.params.id }
})
const exportHandler = (ctx: Koa.Context) => {
  ctx.body = { exported: true }
}`,
      after: 'export { app }',
    })
    const base = await serve(app as Koa)
    const exported = await fetch(`${base}/export`, { method: 'POST' })
    expect(await exported.json()).toEqual({ exported: true })
    expect(exported.headers.get('ratelimit')).toBe('"per-ip";r=90;t=6')
    const user = await fetch(`${base}/users/1`)
    expect(await user.json()).toEqual({ id: '1' })
    expect(user.headers.get('ratelimit')).toBe('"per-ip";r=89;t=7')
  })

  it(`${where(onRejected!)}: onRejected answers refusals`, async () => {
    const { app } = await runner.run(onRejected!, {
      before: `${setup}
const rules = [{ id: 'per-ip', limit: 1, window: '1m' }]`,
      after: `
app.use((ctx) => {
  ctx.body = { ok: true }
})
export { app }`,
    })
    const base = await serve(app as Koa)
    expect((await fetch(base)).status).toBe(200)
    const refused = await fetch(base)
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toBe('60')
    expect(await refused.json()).toEqual({ error: 'Rate limit exceeded (per-ip); retry in 60 s.' })
  })

  it(`${where(proxy!)}: with maxIpsCount, the client cannot pick its bucket`, async () => {
    const { logger, codes } = warningCodes()
    const { app } = await runner.run(proxy!, {
      before: setup,
      after: 'export { app }',
    })
    const koa = app as Koa
    koa.use(rateLimit([{ id: 'per-ip', limit: 1, window: '1m' }], { logger }))
    koa.use((ctx) => {
      ctx.body = { ip: ctx.ip }
    })
    const base = await serve(koa)
    // The proxy appends the address it saw; the client wrote whatever it liked before it.
    const via = (forged: string) => ({ headers: { 'x-forwarded-for': `${forged}, 192.0.2.7` } })
    expect(await (await fetch(base, via('10.0.0.1'))).json()).toEqual({ ip: '192.0.2.7' })
    expect((await fetch(base, via('10.0.0.2'))).status).toBe(429)
    expect(codes).toEqual([])
  })

  it('without maxIpsCount, the first request logs FG_WRN_KOA_PROXY_LEFTMOST_IP once', async () => {
    const { logger, codes } = warningCodes()
    const app = new Koa()
    app.proxy = true
    app.use(rateLimit([{ id: 'per-ip', limit: 100, window: '1m' }], { logger }))
    app.use((ctx) => {
      ctx.body = { ip: ctx.ip }
    })
    const base = await serve(app)
    const forged = { headers: { 'x-forwarded-for': '10.0.0.1, 192.0.2.7' } }
    expect(await (await fetch(base, forged)).json()).toEqual({ ip: '10.0.0.1' })
    await fetch(base, forged)
    expect(codes).toEqual(['FG_WRN_KOA_PROXY_LEFTMOST_IP'])
  })

  itTypeChecks()
})
