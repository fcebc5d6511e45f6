import { createLimiter } from '@floodgate/core'
import { HEADER_FORMATS, type HeaderFormat } from '@floodgate/core/http'
import { rateLimit } from '@floodgate/express'
import express, { type NextFunction, type Request, type Response } from 'express'
import fc from 'fast-check'
import request from 'supertest'
import { describe, expect, it } from 'vitest'

const headersOption = fc.constantFrom<boolean | HeaderFormat>(true, false, ...HEADER_FORMATS)

describe('express: headers already sent by an earlier middleware', () => {
  it('decides every request, writes no header, never throws, and runs the handler only when allowed', async () => {
    await fc.assert(
      fc.asyncProperty(
        headersOption,
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 1, max: 3 }),
        async (headers, shadowHeader, customLimited, limit) => {
          const limiter = createLimiter<Request>({
            rules: [
              { id: 'per-ip', limit, window: '1m' },
              { id: 'trial', limit: 1, window: '1m', shadow: true },
            ],
          })
          const errors: unknown[] = []
          const app = express()
          app.use((_req, res, next) => {
            res.status(200).flushHeaders()
            next()
          })
          app.use(
            rateLimit(limiter, {
              headers,
              shadowHeader,
              onRejected: customLimited
                ? (_req, res, _next, { status }) => void res.status(status).end('limited')
                : undefined,
            }),
          )
          app.get('/', (_req, res) => void res.end('handled'))
          app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
            errors.push(err)
            res.end()
          })
          for (let i = 1; i <= limit + 1; i++) {
            const r = await request(app).get('/')
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
