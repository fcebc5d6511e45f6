import { createServer } from 'node:http'
import { createLimiter } from '@floodgate/core'
import { HEADER_FORMATS, type HeaderFormat } from '@floodgate/core/http'
import { rateLimit } from '@floodgate/koa'
import fc from 'fast-check'
import Koa, { type Context } from 'koa'
import request from 'supertest'
import { describe, expect, it } from 'vitest'

const headersOption = fc.constantFrom<boolean | HeaderFormat>(true, false, ...HEADER_FORMATS)

describe('koa: headers already sent by an earlier middleware', () => {
  it('decides every request, writes no header, never throws, and runs the handler only when allowed', async () => {
    await fc.assert(
      fc.asyncProperty(
        headersOption,
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 1, max: 3 }),
        async (headers, shadowHeader, customLimited, limit) => {
          const limiter = createLimiter<Context>({
            rules: [
              { id: 'per-ip', limit, window: '1m' },
              { id: 'trial', limit: 1, window: '1m', shadow: true },
            ],
          })
          const errors: unknown[] = []
          const app = new Koa()
          app.on('error', (err) => errors.push(err))
          app.use(async (ctx, next) => {
            ctx.status = 200
            ctx.res.flushHeaders()
            await next()
          })
          app.use(
            rateLimit(limiter, {
              headers,
              shadowHeader,
              onRejected: customLimited
                ? (ctx, { status }) => {
                    ctx.status = status
                    ctx.body = 'limited'
                  }
                : undefined,
            }),
          )
          app.use((ctx) => {
            ctx.body = 'handled'
          })
          const server = createServer((req, res) => void app.callback()(req, res))
          for (let i = 1; i <= limit + 1; i++) {
            const r = await request(server).get('/').timeout(2000)
            expect(r.status).toBe(200)
            expect(r.headers['ratelimit']).toBeUndefined()
            expect(r.headers['retry-after']).toBeUndefined()
            expect(r.text === 'handled').toBe(i <= limit)
          }
          expect(errors).toEqual([])
          expect(limiter.counters().total.rejected).toBe(1)
        },
      ),
      { numRuns: 30 },
    )
  })
})
