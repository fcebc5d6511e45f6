/**
 * Koa + Floodgate with @koa/router: an app-wide per-IP limit, and a heavy route whose cost
 * comes from a cost function (app-wide middleware runs before routing, so it cannot see the route).
 *
 *   pnpm --filter example-koa-basic start     (PORT=3000 by default)
 */
import { createServer, type Server } from 'node:http'
import { pathToFileURL } from 'node:url'
import { rateLimit } from '@floodgate/koa'
import Router from '@koa/router'
import Koa from 'koa'

/** Build the app. Behind one reverse proxy, set `app.proxy = true` and `app.maxIpsCount = 1`. */
export function createApp(): Koa {
  const app = new Koa()
  app.use(
    rateLimit([{ id: 'per-ip', limit: 20, window: '1m' }], {
      // One charge per request, atomically with every rule: the export costs 10 units.
      cost: (ctx) => (ctx.method === 'POST' && ctx.path === '/export' ? 10 : 1),
      skip: (ctx) => ctx.path === '/health',
    }),
  )
  const router = new Router()
  router.get('/', (ctx) => {
    ctx.body = { hello: 'world' }
  })
  router.get('/health', (ctx) => {
    ctx.body = { ok: true }
  })
  router.post('/export', (ctx) => {
    ctx.body = { exported: true }
  })
  app.use(router.routes())
  return app
}

/** Listen on `port` (0 for any free port). */
export function start(port: number): Promise<Server> {
  const app = createApp()
  return new Promise((resolve) => {
    const server = createServer((req, res) => void app.callback()(req, res))
    server.listen(port, () => resolve(server))
  })
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const server = await start(Number(process.env.PORT ?? 3000))
  console.log('koa-basic listening on', server.address())
}
