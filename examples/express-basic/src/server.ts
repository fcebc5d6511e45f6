/**
 * Express + Floodgate: a per-IP limit for everyone, a per-user limit for signed-in users, and a
 * heavy route that spends ten units of the same per-IP budget.
 *
 *   pnpm --filter example-express-basic start     (PORT=3000 by default)
 */
import type { Server } from 'node:http'
import { pathToFileURL } from 'node:url'
import { createLimiter } from '@floodgate/core'
import { rateLimit } from '@floodgate/express'
import express, { type Express, type Request } from 'express'

/** Build the app. `trustProxy` mirrors Express's `trust proxy` (only set it behind your proxy). */
export function createApp(): Express {
  const app = express()
  // One limiter shared by the app-wide mount and the heavy route's mount.
  const limiter = createLimiter<Request>({
    rules: [
      { id: 'per-ip', limit: 20, window: '1m' },
      // Signed-in users (x-user-id here; use your auth) get their own bucket; others skip it.
      { id: 'per-user', key: 'user', fallbackKey: 'skip', limit: 100, window: '1m' },
    ],
    keys: { user: (req) => req.get('x-user-id') },
  })

  // Not limited: registered before the limiter, so it never runs for this route.
  app.get('/health', (_req, res) => {
    res.json({ ok: true })
  })
  // The heavy route comes before the app-wide mount and carries its cost: one request charges
  // 10 units of the same buckets, once. (Mounted after the app-wide limiter, the double-count
  // guard would charge it once at the app-wide cost of 1 and log FG_WRN_DOUBLE_MOUNT.)
  app.post('/export', rateLimit(limiter, { cost: 10 }), (_req, res) => {
    res.json({ exported: true })
  })
  app.use(rateLimit(limiter))
  app.get('/', (_req, res) => {
    res.json({ hello: 'world' })
  })
  app.get('/users/:id', (req, res) => {
    res.json({ id: req.params.id })
  })
  return app
}

/** Listen on `port` (0 for any free port). */
export function start(port: number): Promise<Server> {
  return new Promise((resolve) => {
    const server = createApp().listen(port, () => resolve(server))
  })
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const server = await start(Number(process.env.PORT ?? 3000))
  console.log(`express-basic listening on`, server.address())
}
