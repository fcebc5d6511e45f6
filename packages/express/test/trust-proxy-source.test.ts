import { createServer } from 'node:http'
import { listenOnLoopback } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/express'
import express, { type Express } from 'express'
import { describe, expect, it } from 'vitest'

const onePerClient = [{ id: 'per-ip', limit: 1, window: '1m' }]

/** Statuses of two GETs to `/` from two X-Forwarded-For addresses, on one connection's peer. */
async function twoForwarded(app: Express): Promise<number[]> {
  const { url, close } = await listenOnLoopback(createServer(app))
  try {
    const statuses: number[] = []
    for (const xff of ['203.0.113.1', '203.0.113.2']) {
      const res = await fetch(`${url}/`, { headers: { 'x-forwarded-for': xff } })
      await res.arrayBuffer()
      statuses.push(res.status)
    }
    return statuses
  } finally {
    await close()
  }
}

/** A sub-app (with `trust proxy` set as given, or inherited) that limits `/`, in a parent app. */
function mounted(sub: boolean | undefined, parent: boolean | undefined): Express {
  const app = express()
  if (parent !== undefined) app.set('trust proxy', parent)
  const child = express()
  if (sub !== undefined) child.set('trust proxy', sub)
  child.use(rateLimit(onePerClient, { warnings: false }))
  child.get('/', (_req, res) => void res.end('ok'))
  app.use(child)
  return app
}

// The middleware reads `trust proxy` from `req.app` by way of the request's prototype (Express's
// `app.request`); these pin that it is still the app handling the request, and its own `app`
// when a request has one.
describe("the app whose 'trust proxy' counts", () => {
  it('is the sub-app handling the request, not its parent', async () => {
    // Two forwarded clients: two buckets, both pass.
    expect(await twoForwarded(mounted(true, undefined))).toEqual([200, 200])
  })

  it('is the sub-app when it turns off the trust its parent has', async () => {
    // The sub-app's own setting counts: one peer, one bucket.
    expect(await twoForwarded(mounted(false, true))).toEqual([200, 429])
  })

  it("is a request's own `app` when a middleware gave it one", async () => {
    const trusting = express()
    trusting.set('trust proxy', true)
    const app = express()
    app.use((req, _res, next) => {
      Object.defineProperty(req, 'app', { value: trusting, enumerable: true })
      next()
    })
    app.use(rateLimit(onePerClient, { warnings: false }))
    app.get('/', (_req, res) => void res.end('ok'))
    expect(await twoForwarded(app)).toEqual([200, 200])
  })
})
