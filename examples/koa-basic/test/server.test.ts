import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { start } from '../src/server.js'

let server: Server
let base: string
beforeAll(async () => {
  server = await start(0)
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => {
  server.closeAllConnections()
  server.close()
})

describe('koa-basic', () => {
  it('limits per IP, charges the export 10 units, skips /health', async () => {
    expect((await fetch(`${base}/export`, { method: 'POST' })).status).toBe(200)
    for (let i = 0; i < 10; i++) expect((await fetch(`${base}/`)).status).toBe(200)
    const limited = await fetch(`${base}/`)
    expect(limited.status).toBe(429)
    expect(limited.headers.get('ratelimit-policy')).toBe('"per-ip";q=20;w=60')
    expect(((await limited.json()) as Record<string, unknown>).status).toBe(429)
    const health = await fetch(`${base}/health`)
    expect(health.status).toBe(200)
    expect(health.headers.get('ratelimit')).toBeNull()
  })
})
