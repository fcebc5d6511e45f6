import { createServer } from 'node:http'
import { listenOnLoopback } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/express'
import express, { type Express, type Request } from 'express'
import { describe, expect, it } from 'vitest'

const rules = [{ id: 'per-ip', limit: 100, window: '1m' }] as const

/** GETs each path once, in order; the JSON bodies. */
async function get(app: Express, ...paths: string[]): Promise<unknown[]> {
  const { url, close } = await listenOnLoopback(createServer(app))
  try {
    const bodies: unknown[] = []
    for (const path of paths) bodies.push(await (await fetch(url + path)).json())
    return bodies
  } finally {
    await close()
  }
}

/** What a handler sees of `req.rateLimit`, and whether the request got a property for it. */
const seen = (req: Request) => ({
  remaining: req.rateLimit?.remaining,
  own: Object.hasOwn(req, 'rateLimit'),
})

describe('req.rateLimit', () => {
  it('reaches the handler without a property added to the request', async () => {
    // Express swaps each request's prototype; a property added after that gives the request a
    // new hidden class per request, which every later read of it pays for.
    const app = express()
    app.use(rateLimit([...rules]))
    app.get('/', (req, res) => void res.json(seen(req)))
    expect(await get(app, '/', '/')).toEqual([
      { remaining: 99, own: false },
      { remaining: 98, own: false },
    ])
  })

  it('is absent on a request the mount skipped, and per request, not per app', async () => {
    const app = express()
    app.use(rateLimit([...rules], { skip: (req) => req.path === '/skipped' }))
    app.get('/skipped', (req, res) => void res.json({ info: req.rateLimit ?? null }))
    app.get('/', (req, res) => void res.json(seen(req)))
    expect(await get(app, '/skipped', '/', '/skipped')).toEqual([
      { info: null },
      { remaining: 99, own: false },
      { info: null },
    ])
  })

  it('keeps the last value written, by Floodgate or by other middleware', async () => {
    const app = express()
    app.use((req, _res, next) => {
      // What express-rate-limit does with its own info, before Floodgate's mount.
      ;(req as { rateLimit?: unknown }).rateLimit = 'earlier'
      next()
    })
    app.use(rateLimit([...rules]))
    app.get('/', (req, res) => void res.json(seen(req)))
    app.get('/later', (req, res) => {
      ;(req as { rateLimit?: unknown }).rateLimit = 'later'
      res.json({ info: req.rateLimit })
    })
    expect(await get(app, '/', '/later')).toEqual([
      { remaining: 99, own: false },
      { info: 'later' },
    ])
  })

  it('stays readable after a sub-app that decided hands the request back to its parent', async () => {
    const sub = express()
    sub.use(rateLimit([...rules]))
    const app = express()
    app.use(sub)
    // Express has put back the parent app's request prototype by now.
    app.get('/', (req, res) => void res.json(seen(req)))
    expect(await get(app, '/')).toEqual([{ remaining: 99, own: false }])
  })

  it('is written to a property the request already has of its own', async () => {
    const app = express()
    app.use((req, _res, next) => {
      Object.defineProperty(req, 'rateLimit', { value: 'own', writable: true, enumerable: true })
      next()
    })
    app.use(rateLimit([...rules]))
    app.get('/', (req, res) => void res.json(seen(req)))
    expect(await get(app, '/')).toEqual([{ remaining: 99, own: true }])
  })
})
