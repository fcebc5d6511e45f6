import { Writable } from 'node:stream'
import { createLimiter } from '@floodgate/core'
import { HEADER_FORMATS, type HeaderFormat } from '@floodgate/core/http'
import { rateLimit } from '@floodgate/fastify'
import Fastify, { type FastifyRequest } from 'fastify'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

const headersOption = fc.constantFrom<boolean | HeaderFormat>(true, false, ...HEADER_FORMATS)

describe('fastify: headers already sent by an earlier hook', () => {
  it('decides every request, writes no header, logs no error, and runs the handler only when allowed', async () => {
    await fc.assert(
      fc.asyncProperty(
        headersOption,
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 1, max: 3 }),
        async (headers, shadowHeader, customLimited, limit) => {
          const limiter = createLimiter<FastifyRequest>({
            rules: [
              { id: 'per-ip', limit, window: '1m' },
              { id: 'trial', limit: 1, window: '1m', shadow: true },
            ],
          })
          const logged: string[] = []
          const stream = new Writable({
            write(chunk: Buffer, _enc, cb) {
              logged.push(chunk.toString())
              cb()
            },
          })
          const app = Fastify({ logger: { level: 'warn', stream } })
          // An earlier hook sends the head on the raw response.
          app.addHook('onRequest', (_request, reply, done) => {
            reply.raw.writeHead(200).flushHeaders()
            done()
          })
          await app.register(rateLimit, {
            rules: limiter,
            headers,
            shadowHeader,
            onRejected: customLimited
              ? (_request, reply, { status }) => void reply.code(status).send('limited')
              : undefined,
          })
          app.get('/', (_request, reply) => {
            reply.hijack()
            reply.raw.end('handled')
          })
          await app.listen({ port: 0, host: '127.0.0.1' })
          try {
            const { port } = app.server.address() as { port: number }
            for (let i = 1; i <= limit + 1; i++) {
              const r = await fetch(`http://127.0.0.1:${port}/`, {
                signal: AbortSignal.timeout(2000),
              })
              expect(r.status).toBe(200)
              expect(r.headers.get('ratelimit')).toBeNull()
              expect(r.headers.get('retry-after')).toBeNull()
              expect((await r.text()) === 'handled').toBe(i <= limit)
            }
            expect(logged).toEqual([])
            expect(limiter.counters().total.rejected).toBe(1)
          } finally {
            app.server.closeAllConnections()
            await app.close()
          }
        },
      ),
      { numRuns: 20 },
    )
  })
})
