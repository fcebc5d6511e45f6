import { createServer } from 'node:http'
import type { Limiter } from '@floodgate/core'
import {
  agreeMountOptions,
  echoRateLimit,
  listenOnLoopback,
  type AgreeServe,
  type HarnessSetup,
  type RunningApp,
  type ScenarioRoute,
} from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/koa'
import Router from '@koa/router'
import Koa, { type Context } from 'koa'
import request from 'supertest'

/** Builds the scenario app the Koa way: heavy and exempt routes routed before the app-wide limiter. */
export async function startKoa(setup: HarnessSetup): Promise<RunningApp> {
  const app = new Koa()
  app.silent = true
  if (setup.trustProxy) {
    app.proxy = true
    app.maxIpsCount = 1
  }
  const limiter = setup.limiter as unknown as Limiter<Context>
  const handler = (route: ScenarioRoute) => async (ctx: Context) => {
    await setup.enter(route, ctx.req)
    if (route.fail) throw new Error('boom')
    ctx.body = route.echo
      ? { ok: true, rateLimit: echoRateLimit(ctx.state.rateLimit) }
      : { ok: true }
  }
  app.use(async (ctx, next) => {
    try {
      await next()
    } catch {
      ctx.status = 500
      ctx.body = { error: 'boom' }
    }
  })
  app.use(async (ctx, next) => {
    await setup.beforeLimiter(ctx.req)
    await next()
  })
  const early = new Router()
  const late = new Router()
  for (const r of setup.routes) {
    const verb = r.method === 'GET' ? 'get' : 'post'
    if (r.exempt) early[verb](r.path, handler(r))
    else if (r.cost !== undefined) {
      early[verb](r.path, rateLimit(limiter, { ...setup.options, cost: r.cost }), handler(r))
    } else late[verb](r.path, handler(r))
  }
  app.use(early.routes())
  app.use(rateLimit(limiter, setup.options))
  app.use(late.routes())
  const server = createServer((req, res) => void app.callback()(req, res))
  const { url, close } = await listenOnLoopback(server)
  return {
    url,
    async send(req) {
      const agent = request(server)
      const r = await (req.method === 'GET' ? agent.get(req.path) : agent.post(req.path)).set(
        req.headers ?? {},
      )
      return { status: r.status, headers: r.headers, text: r.text }
    },
    close,
  }
}

/** The app of `describeAdaptersAgree`: the limiter app-wide, every request answered 200. */
export const agreeKoa: AgreeServe = (limiter, trust, callbacks = {}) => {
  const app = new Koa()
  app.silent = true
  app.proxy = trust !== 'none'
  if (trust === 'one') app.maxIpsCount = 1
  const { onRejected } = callbacks
  app.use(
    rateLimit(limiter as unknown as Limiter<Context>, {
      ...agreeMountOptions(callbacks),
      onRejected:
        onRejected &&
        ((ctx) =>
          onRejected(() => {
            ctx.status = 418
          }) as void),
    }),
  )
  app.use((ctx) => {
    ctx.body = { ok: true }
  })
  return listenOnLoopback(createServer((req, res) => void app.callback()(req, res)))
}
