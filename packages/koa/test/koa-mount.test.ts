import { createServer } from 'node:http'
import { createLimiter, type RuleInput } from '@floodgate/core'
import { listenOnLoopback, sendRaw, type LoopbackServer } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/koa'
import Router from '@koa/router'
import fc from 'fast-check'
import Koa, { type Context } from 'koa'
import mount from 'koa-mount'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

// Limits far above what the tests send: only which rules apply is observed.
const big = { limit: 1_000_000, window: '1m' } as const
const rules: readonly RuleInput[] = [
  { id: 'top-user', match: 'GET /users/:id', ...big },
  { id: 'top-me', match: '/users/me', ...big },
  { id: 'top-users', match: '/users/**', ...big },
  { id: 'api-user', match: 'GET /api/users/:id', ...big },
  { id: 'api-all', match: '/api/**', ...big },
  { id: 'v1-user', match: '/v1/api/users/:id', ...big },
  { id: 'v1-all', match: '/v1/**', ...big },
]
const prefixes = ['/api', '/v1/api', '/users'] as const

interface App {
  readonly server: LoopbackServer
  /** The rule ids the last decision of this app's limiter was made with. */
  rules(): string[] | undefined
  close(): Promise<void>
}

/**
 * A route-level mount on `/users/:id`, reached under `prefix` either through koa-mount (the
 * router sees the path without the prefix) or through a router that has the prefix itself.
 */
async function start(prefix: string, how: 'koa-mount' | 'router prefix'): Promise<App> {
  let last: string[] | undefined
  const limiter = createLimiter<Context>({
    rules,
    onDecision: (d) => (last = d.outcomes.map((o) => o.rule.id).sort()),
  })
  const router = new Router(how === 'router prefix' ? { prefix } : {})
  router.get('/users/:id', rateLimit(limiter), (ctx) => {
    ctx.body = { id: ctx.params.id }
  })
  const app = new Koa()
  if (how === 'koa-mount') {
    const inner = new Koa()
    inner.use(router.routes())
    app.use(mount(prefix, inner))
  } else {
    app.use(router.routes())
  }
  const server = await listenOnLoopback(createServer((req, res) => void app.callback()(req, res)))
  return {
    server,
    rules: () => last,
    close: async () => {
      await server.close()
      await limiter.close()
    },
  }
}

describe('koa: a route mount under koa-mount matches rules on the full path', () => {
  const apps = new Map<string, { mounted: App; prefixed: App }>()
  beforeAll(async () => {
    for (const prefix of prefixes) {
      apps.set(prefix, {
        mounted: await start(prefix, 'koa-mount'),
        prefixed: await start(prefix, 'router prefix'),
      })
    }
  })
  afterAll(async () => {
    for (const { mounted, prefixed } of apps.values()) {
      await mounted.close()
      await prefixed.close()
    }
  })

  async function rulesFor(app: App, target: string) {
    const r = await sendRaw(app.server.port, 'GET', target)
    return { status: r.status, body: r.body, rules: app.rules() }
  }

  it('does not apply a rule on /users/:id to /api/users/42', async () => {
    const { mounted } = apps.get('/api')!
    const r = await rulesFor(mounted, '/api/users/42')
    expect(r.status).toBe(200)
    expect(r.rules).toEqual(['api-all', 'api-user'])
  })

  it('property: the same rules as the route registered with the prefix, for any target', async () => {
    const target = fc.record({
      prefix: fc.constantFrom(...prefixes),
      origin: fc.constantFrom('', 'http://x'),
      rest: fc.constantFrom('/users/42', '/users/me', '/users/%6De', '/users/me/', '/users/a%2Fb'),
      query: fc.constantFrom('', '?a=1', '?p=/users/me'),
    })
    await fc.assert(
      fc.asyncProperty(target, async ({ prefix, origin, rest, query }) => {
        const { mounted, prefixed } = apps.get(prefix)!
        const path = origin + prefix + rest + query
        const a = await rulesFor(mounted, path)
        const b = await rulesFor(prefixed, path)
        expect(a.status, path).toBe(200)
        expect(a.body, path).toBe(b.body)
        expect(a.rules, path).toEqual(b.rules)
      }),
      { numRuns: 40 },
    )
  })
})
