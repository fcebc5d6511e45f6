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

describe('express-basic', () => {
  it('limits per IP, charges the heavy route 10 units, never limits /health', async () => {
    const first = await fetch(`${base}/`)
    expect(first.status).toBe(200)
    expect(first.headers.get('ratelimit-policy')).toBe('"per-ip";q=20;w=60')
    expect(first.headers.get('ratelimit')).toMatch(/^"per-ip";r=19;t=\d+$/)

    const exp = await fetch(`${base}/export`, { method: 'POST' })
    expect(exp.status).toBe(200)
    expect(exp.headers.get('ratelimit')).toMatch(/^"per-ip";r=9;t=\d+$/)

    for (let i = 0; i < 9; i++) expect((await fetch(`${base}/users/${i}`)).status).toBe(200)
    const limited = await fetch(`${base}/`)
    expect(limited.status).toBe(429)
    expect(limited.headers.get('content-type')).toBe('application/problem+json; charset=utf-8')
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    const body = (await limited.json()) as Record<string, unknown>
    expect(body['violated-policies']).toStrictEqual(['per-ip'])

    for (let i = 0; i < 3; i++) expect((await fetch(`${base}/health`)).status).toBe(200)
  })
})
