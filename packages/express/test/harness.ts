import { createServer } from 'node:http'
import {
  agreeMountOptions,
  echoRateLimit,
  listenOnLoopback,
  type AgreeServe,
  type HarnessSetup,
  type RunningApp,
  type ScenarioRoute,
} from '@floodgate/core/testing'
import type { Limiter } from '@floodgate/core'
import { rateLimit } from '@floodgate/express'
import express, { type NextFunction, type Request, type Response } from 'express'
import request from 'supertest'

/** Builds the scenario app the Express way: heavy and exempt routes before the app-wide limiter. */
export async function startExpress(setup: HarnessSetup): Promise<RunningApp> {
  const app = express()
  if (setup.trustProxy) app.set('trust proxy', true)
  const limiter = setup.limiter as unknown as Limiter<Request>
  const handler = (route: ScenarioRoute) => async (req: Request, res: Response) => {
    await setup.enter(route, req)
    if (route.fail) throw new Error('boom')
    res.json(route.echo ? { ok: true, rateLimit: echoRateLimit(req.rateLimit) } : { ok: true })
  }
  const verb = (r: ScenarioRoute): 'get' | 'post' => (r.method === 'GET' ? 'get' : 'post')
  app.use((req: Request, _res: Response, next: NextFunction) => {
    void setup.beforeLimiter(req).then(() => next())
  })
  for (const r of setup.routes) {
    if (r.exempt) app[verb(r)](r.path, handler(r))
    else if (r.cost !== undefined) {
      app[verb(r)](r.path, rateLimit(limiter, { ...setup.options, cost: r.cost }), handler(r))
    }
  }
  app.use(rateLimit(limiter, setup.options))
  for (const r of setup.routes) {
    if (!r.exempt && r.cost === undefined) app[verb(r)](r.path, handler(r))
  }
  app.use((_err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    res.status(500).json({ error: 'boom' })
  })
  const server = createServer(app)
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
export const agreeExpress: AgreeServe = (limiter, trust, callbacks = {}) => {
  const app = express()
  app.set('trust proxy', trust === 'all' ? true : trust === 'one' ? 'loopback' : false)
  const { onRejected } = callbacks
  app.use(
    rateLimit(limiter as unknown as Limiter<Request>, {
      ...agreeMountOptions(callbacks),
      onRejected:
        onRejected && ((_req, res) => onRejected(() => void res.status(418).end()) as void),
    }),
  )
  app.use((_req: Request, res: Response) => void res.json({ ok: true }))
  app.use((_err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    res.status(500).json({ error: 'boom' })
  })
  return listenOnLoopback(createServer(app))
}
