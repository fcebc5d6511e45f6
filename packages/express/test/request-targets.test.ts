import { createServer } from 'node:http'
import { createLimiter, type Limiter } from '@floodgate/core'
import {
  describeSpellingProperty,
  type SpellingVariant,
  listenOnLoopback,
  sendRaw,
} from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/express'
import express, { type Request } from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

function variant(name: string, caseSensitive: boolean, strict: boolean): SpellingVariant {
  return {
    name,
    async start(limiter, routes) {
      const app = express()
      app.set('case sensitive routing', caseSensitive)
      app.set('strict routing', strict)
      app.use(rateLimit(limiter as unknown as Limiter<Request>))
      for (const r of routes) {
        app[r.method === 'GET' ? 'get' : 'post'](r.path, (req, res) => {
          res.json({ route: r.path, params: req.params })
        })
      }
      return listenOnLoopback(createServer(app))
    },
  }
}

describeSpellingProperty('express', [
  variant('default routing', false, false),
  variant('case-sensitive, strict routing', true, true),
])

// Express routes on `req.baseUrl + req.url`, which a middleware may rewrite (a `/v2` prefix
// stripped, a locale dropped); `req.originalUrl` keeps the client's spelling. Rules must match
// the path Express routes, or `POST /v2/login` reaches the `/login` handler without its rule.
describe('express: rules match the path Express routes after a rewrite', () => {
  let last: string[] | undefined
  const big = { limit: 1_000_000, window: '1m' } as const
  const limiter = createLimiter({
    rules: [
      { id: 'login', match: 'POST /login', ...big },
      { id: 'me', match: '/api/users/me', ...big },
      { id: 'all', ...big },
    ],
    onDecision: (d) => (last = d.outcomes.map((o) => o.rule.id).sort()),
  })
  let app: { readonly port: number; close(): Promise<void> } | undefined
  beforeAll(async () => {
    const ex = express()
    ex.use((req, _res, next) => {
      // Absolute-form too: `http://x/v2/api` keeps its origin in `req.url`.
      req.url = req.url.replace(/^((?:http:\/\/[^/]*)?)\/v2\//, '$1/')
      next()
    })
    const mw = rateLimit(limiter)
    ex.post('/login', mw, (_req, res) => void res.json({ route: '/login' }))
    const router = express.Router()
    router.use(mw)
    router.get(
      '/users/:id',
      (req, res) => void res.json({ route: '/users/:id', params: req.params }),
    )
    ex.use('/api', router)
    app = await listenOnLoopback(createServer(ex))
  })
  afterAll(async () => {
    await app?.close()
    await limiter.close()
  })

  async function rulesFor(method: string, target: string) {
    last = undefined
    const r = await sendRaw(app!.port, method, target)
    return { ...r, rules: last }
  }

  it.each([
    ['POST', '/login', '/v2/login'],
    ['GET', '/api/users/me', '/v2/api/users/me'],
    ['GET', '/api/users/me', 'http://x/api/users/me'],
    ['GET', '/api/users/me', 'http://x/v2/api/users/me?a=1'],
  ])('%s %s and %s meet the same rules', async (method, plain, rewritten) => {
    const a = await rulesFor(method, plain)
    const b = await rulesFor(method, rewritten)
    expect(a.status).toBe(200)
    expect(b.body).toBe(a.body)
    expect(b.rules).toEqual(a.rules)
    expect(a.rules).toContain(method === 'POST' ? 'login' : 'me')
  })
})
