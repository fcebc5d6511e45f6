/**
 * Fastify + Floodgate: per-route cost, per-route rules and an exempt route, all in route config.
 *
 *   pnpm --filter example-fastify-route-cost start     (PORT=3000 by default)
 */
import { pathToFileURL } from 'node:url'
import { rateLimit } from '@floodgate/fastify'
import Fastify, { type FastifyInstance } from 'fastify'

/** Build the app (not listening yet). */
export async function createApp(): Promise<FastifyInstance> {
  const app = Fastify({ logger: process.env.LOG === '1' })
  // Register before the routes: each route gets its hook when it is declared.
  await app.register(rateLimit, {
    rules: [{ id: 'budget', limit: 30, window: '1m' }],
  })

  app.get('/health', { config: { rateLimit: false } }, () => ({ ok: true }))
  app.get('/items/:id', (request) => ({ id: (request.params as { id: string }).id }))
  // A report costs 10 units of the caller's budget, charged once with the other rules.
  app.post('/reports', { config: { rateLimit: { cost: 10 } } }, () => ({ queued: true }))
  // Search is cheap per call but gets an extra rule of its own: 5 per 10 s per IP.
  app.get(
    '/search',
    { config: { rateLimit: { rules: [{ id: 'search', limit: 5, window: '10s' }] } } },
    () => ({ results: [] }),
  )
  return app
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const app = await createApp()
  await app.listen({ port: Number(process.env.PORT ?? 3000) })
  console.log('fastify-route-cost listening on', app.server.address())
}
