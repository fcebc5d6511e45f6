import { once } from 'node:events'
import { createServer } from 'node:http'
import type { Server } from 'node:http'
import type { RequestHandler } from 'express'
import type { AddressInfo } from 'node:net'
import { createLimiter } from '@floodgate/core'
import type { AdaptiveState } from '@floodgate/core/adaptive'
import type { HeaderBag } from '@floodgate/core/http'
import type { Limiter, RuleInput, RulesSource, Store } from '@floodgate/core'
import type { Db } from './db.js'
import { PoolTimeoutError } from './db-pool.js'
import { CLIENT_HEADER, EXPORT_COST, WORK_MS } from './rules.js'

/** Web frameworks the demo service can run on; each has a Floodgate adapter. */
export type Framework = 'express' | 'fastify' | 'koa'

/** How one app host is set up. Plain data, so it can be handed to a child process. */
export interface HostConfig {
  readonly framework: Framework
  /** `none`: the service as most start out; `floodgate`: the same service behind Floodgate. */
  readonly limiter: 'none' | 'floodgate'
  readonly store: 'memory' | 'redis'
  /** Redis for `store: 'redis'`. */
  readonly redisUrl?: string | undefined
  /** Key prefix, unique per run, so two runs never share counters in Redis. */
  readonly redisPrefix?: string | undefined
  /** Static rules, used when no rules service URL is given. */
  readonly rules: readonly RuleInput[]
  /** URL of the rule set in a rules service, polled for the rules (as in production). */
  readonly rulesUrl?: string | undefined
}

/** How the limiter judged one client's requests. */
export interface DecisionCounts {
  allow: number
  queue: number
  reject: number
  drop: number
}

/** When a host's limiter decided its first and its last request (Date.now, comparable across processes). */
export interface DecisionSpan {
  readonly firstAt: number
  readonly lastAt: number
}

/** A running app host. */
export interface RunningHost {
  readonly url: string
  /** Limiter decisions per client key (empty without a limiter). */
  decisions(): Record<string, DecisionCounts>
  /** Wall-clock times (Date.now) of the first and last decision, if any. */
  decisionSpan(): DecisionSpan | undefined
  /** The live state of an adaptive rule of this host's limiter (undefined without one). */
  adaptive(ruleId: string): AdaptiveState | undefined
  close(): Promise<void>
}

function clientOf(headers: HeaderBag): string {
  const value = headers[CLIENT_HEADER]
  return (Array.isArray(value) ? value[0] : value) ?? 'anonymous'
}

/** The service's one piece of logic: a query on the shared pool, 503 when it is overloaded. */
async function serve(
  db: Db,
  client: string,
  endpoint: keyof typeof WORK_MS,
): Promise<{ status: number; body: unknown }> {
  try {
    await db.query(client, WORK_MS[endpoint])
    return { status: 200, body: { endpoint, client } }
  } catch (error) {
    if (error instanceof PoolTimeoutError) {
      return { status: 503, body: { error: 'database overloaded', detail: error.message } }
    }
    throw error
  }
}

async function createStore(config: HostConfig): Promise<Store | undefined> {
  if (config.store === 'memory') return undefined
  const { RedisStore } = await import('@floodgate/redis')
  const store = new RedisStore({
    url: config.redisUrl ?? 'redis://127.0.0.1:6379',
    prefix: config.redisPrefix ?? 'fg-demo',
    // Redis on loopback answers in well under a millisecond; allow for a busy laptop.
    callTimeoutMs: 200,
  })
  // The store refuses calls until connected (no offline queue): wait, so the first requests
  // are judged rather than failed open.
  if (store.client.status !== 'ready') {
    try {
      await once(store.client, 'ready', { signal: AbortSignal.timeout(5000) })
    } catch {
      await store.close()
      throw new Error(
        `could not connect to Redis at ${config.redisUrl ?? 'redis://127.0.0.1:6379'}`,
      )
    }
  }
  return store
}

async function createRulesSource(config: HostConfig): Promise<readonly RuleInput[] | RulesSource> {
  if (config.rulesUrl === undefined) return config.rules
  const { httpRulesSource } = await import('./rules-from-service.js')
  return httpRulesSource(config.rulesUrl)
}

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function closeServer(server: Server): Promise<void> {
  const closed = once(server, 'close')
  server.close()
  // Keep-alive sockets of the load generator would hold close() open.
  server.closeAllConnections()
  await closed
}

type Started = { url: string; close: () => Promise<void> }

async function startExpress(db: Db, limiter: Limiter | undefined): Promise<Started> {
  const [{ default: express }, { rateLimit }] = await Promise.all([
    import('express'),
    import('@floodgate/express'),
  ])
  const app = express()
  app.disable('x-powered-by')
  // Mounted per route: the export route's mount carries its cost.
  const guard = (cost: number): RequestHandler[] =>
    limiter ? [rateLimit(limiter, cost === 1 ? {} : { cost })] : []
  for (const endpoint of ['items', 'export'] as const) {
    app.get(`/${endpoint}`, ...guard(endpoint === 'export' ? EXPORT_COST : 1), (req, res, next) => {
      serve(db, clientOf(req.headers), endpoint).then(
        ({ status, body }) => void res.status(status).json(body),
        next,
      )
    })
  }
  app.get('/healthz', (_req, res) => void res.json({ ok: true }))
  const server = createServer(app)
  const url = await listen(server)
  return { url, close: () => closeServer(server) }
}

async function startKoa(db: Db, limiter: Limiter | undefined): Promise<Started> {
  const [{ default: Koa }, { default: Router }, { rateLimit }] = await Promise.all([
    import('koa'),
    import('@koa/router'),
    import('@floodgate/koa'),
  ])
  const app = new Koa()
  const router = new Router()
  for (const endpoint of ['items', 'export'] as const) {
    const cost = endpoint === 'export' ? EXPORT_COST : 1
    const guard = limiter ? [rateLimit(limiter, cost === 1 ? {} : { cost })] : []
    router.get(`/${endpoint}`, ...guard, async (ctx) => {
      const { status, body } = await serve(db, clientOf(ctx.headers), endpoint)
      ctx.status = status
      ctx.body = body
    })
  }
  router.get('/healthz', (ctx) => {
    ctx.body = { ok: true }
  })
  app.use(router.routes())
  const handler = app.callback()
  const server = createServer((req, res) => void handler(req, res))
  const url = await listen(server)
  return { url, close: () => closeServer(server) }
}

async function startFastify(db: Db, limiter: Limiter | undefined): Promise<Started> {
  const [{ default: Fastify }, { rateLimit }] = await Promise.all([
    import('fastify'),
    import('@floodgate/fastify'),
  ])
  const app = Fastify({ logger: false, forceCloseConnections: true })
  if (limiter) await app.register(rateLimit, { rules: limiter })
  for (const endpoint of ['items', 'export'] as const) {
    const cost = endpoint === 'export' ? EXPORT_COST : 1
    // The route's cost lives in its config, the Fastify way.
    app.get(`/${endpoint}`, { config: { rateLimit: { cost } } }, async (request, reply) => {
      const { status, body } = await serve(db, clientOf(request.headers), endpoint)
      return reply.status(status).send(body)
    })
  }
  app.get('/healthz', { config: { rateLimit: false } }, () => ({ ok: true }))
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  return { url, close: () => app.close() }
}

/**
 * Starts one app host of the demo service: `GET /items` (one short query) and `GET /export`
 * (one long query), both on the shared database, identified by the `x-api-key` header.
 *
 * @param config - framework, limiter on or off, store, rules
 * @param db - the shared database
 * @returns the running host
 */
export async function startHost(config: HostConfig, db: Db): Promise<RunningHost> {
  const counts = new Map<string, DecisionCounts>()
  let span: { firstAt: number; lastAt: number } | undefined
  let limiter: Limiter | undefined
  if (config.limiter === 'floodgate') {
    limiter = createLimiter({
      rules: await createRulesSource(config),
      store: await createStore(config),
      // Redis on loopback answers in well under a millisecond; allow for a busy laptop.
      decisionTimeoutMs: 200,
      onDecision: (decision, facts) => {
        const client = clientOf(facts.headers)
        let c = counts.get(client)
        if (c === undefined) counts.set(client, (c = { allow: 0, queue: 0, reject: 0, drop: 0 }))
        c[decision.action]++
        const now = Date.now()
        if (span === undefined) span = { firstAt: now, lastAt: now }
        else span.lastAt = now
      },
    })
    await limiter.ready
  }
  const start =
    config.framework === 'express'
      ? startExpress
      : config.framework === 'koa'
        ? startKoa
        : startFastify
  const started = await start(db, limiter)
  return {
    url: started.url,
    decisions: () => Object.fromEntries(counts),
    decisionSpan: () => span,
    adaptive: (ruleId) => limiter?.adaptive(ruleId),
    close: async () => {
      await started.close()
      await limiter?.close()
    },
  }
}
