import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../src/server.js'

let app: FastifyInstance
let base: string
beforeAll(async () => {
  app = await createApp()
  base = await app.listen({ port: 0, host: '127.0.0.1' })
})
afterAll(async () => {
  app.server.closeAllConnections()
  await app.close()
})

describe('fastify-route-cost', () => {
  it('charges reports 10 units, applies the search rule, leaves /health alone', async () => {
    for (let i = 0; i < 5; i++) expect((await fetch(`${base}/search?q=${i}`)).status).toBe(200)
    const search = await fetch(`${base}/search?q=x`)
    expect(search.status).toBe(429)
    expect(((await search.json()) as Record<string, unknown>)['violated-policies']).toStrictEqual([
      'search',
    ])

    // 30 - 5 searches = 25 left: two reports (20) pass, the third (10 more) does not.
    expect((await fetch(`${base}/reports`, { method: 'POST' })).status).toBe(200)
    const second = await fetch(`${base}/reports`, { method: 'POST' })
    expect(second.status).toBe(200)
    expect(second.headers.get('ratelimit')).toMatch(/^"budget";r=5;t=\d+$/)
    const third = await fetch(`${base}/reports`, { method: 'POST' })
    expect(third.status).toBe(429)
    expect(third.headers.get('retry-after')).not.toBeNull()

    expect((await fetch(`${base}/items/7`)).status).toBe(200)
    const health = await fetch(`${base}/health`)
    expect(health.status).toBe(200)
    expect(health.headers.get('ratelimit')).toBeNull()
  })
})
