import type { AddressInfo } from 'node:net'
import type { Limiter } from '@floodgate/core'
import {
  agreeMountOptions,
  echoRateLimit,
  type AgreeServe,
  type HarnessSetup,
  type RunningApp,
} from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/fastify'
import Fastify, { type FastifyRequest } from 'fastify'

/** Builds the scenario app the Fastify way: route config carries cost and exemptions. */
export async function startFastify(setup: HarnessSetup): Promise<RunningApp> {
  const app = Fastify({ trustProxy: setup.trustProxy })
  // Instance hooks run before the plugin's route hooks.
  app.addHook('onRequest', (request, _reply, done) => {
    void setup.beforeLimiter(request.raw).then(() => done())
  })
  await app.register(rateLimit, {
    rules: setup.limiter as unknown as Limiter<FastifyRequest>,
    ...setup.options,
  })
  app.setErrorHandler((_err, _request, reply) => reply.code(500).send({ error: 'boom' }))
  for (const r of setup.routes) {
    app.route({
      method: r.method,
      url: r.path,
      config: { rateLimit: r.exempt ? false : r.cost !== undefined ? { cost: r.cost } : {} },
      handler: async (request) => {
        await setup.enter(r, request.raw)
        if (r.fail) throw new Error('boom')
        return r.echo ? { ok: true, rateLimit: echoRateLimit(request.rateLimit) } : { ok: true }
      },
    })
  }
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    async send(req) {
      const r = await app.inject({ method: req.method, url: req.path, headers: req.headers ?? {} })
      return { status: r.statusCode, headers: r.headers as Record<string, string>, text: r.body }
    },
    close: async () => {
      app.server.closeAllConnections()
      await app.close()
    },
  }
}

/** The app of `describeAdaptersAgree`: the plugin, no routes, every request answered 200. */
export const agreeFastify: AgreeServe = async (limiter, trust, callbacks = {}) => {
  const app = Fastify({ trustProxy: trust === 'all' ? true : trust === 'one' ? 'loopback' : false })
  const { onRejected } = callbacks
  await app.register(rateLimit, {
    rules: limiter as unknown as Limiter<FastifyRequest>,
    ...agreeMountOptions(callbacks),
    onRejected:
      onRejected && ((_request, reply) => onRejected(() => void reply.code(418).send()) as void),
  })
  app.setNotFoundHandler((_request, reply) => void reply.send({ ok: true }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  return {
    port,
    close: async () => {
      app.server.closeAllConnections()
      await app.close()
    },
  }
}
