import { createServer, request as httpRequest, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import Fastify, { type FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { httpRules } from '@floodgate/core'
import { rateLimit } from '@floodgate/fastify'
import { startRulesService, type RunningRulesService } from '@floodgate/rules-service'
import { TOKENS, waitFor } from './helpers.js'

type ProxyMode = 'pass' | 'garbage' | 'slow'

/**
 * A loopback proxy between the host and the service that can turn bad on demand: answer
 * garbage, or hold every request without answering (a stalled service).
 */
async function faultProxy(
  target: () => string,
): Promise<{ url: string; mode: ProxyMode; close(): Promise<void> }> {
  const held: ServerResponse[] = []
  const proxy = {
    url: '',
    mode: 'pass' as ProxyMode,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held) res.destroy()
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
  const server: Server = createServer((req, res) => {
    if (proxy.mode === 'garbage') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"rules": [{"id": "x"')
      return
    }
    if (proxy.mode === 'slow') {
      held.push(res)
      return
    }
    const upstream = httpRequest(
      `${target()}${req.url ?? '/'}`,
      { method: req.method, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers)
        up.pipe(res)
      },
    )
    upstream.on('error', () => res.destroy())
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return proxy
}

// A real host (Fastify + @floodgate/fastify) polling a real rules service over loopback HTTP
// with core's httpRules source: the path a rule takes from an owner's API call to enforcement.
describe('a host polling the rules service', () => {
  const INTERVAL_MS = 100
  // Bounds for waiting on a condition, not timing assertions: generous for a loaded CI machine.
  const DEADLINE_MS = 10_000
  // A poll's own deadline, tested by the stalled-service case: long enough that a poll of a
  // healthy service on a starved machine never hits it (a timeout there is a warning, and
  // changes which poll applies a change).
  const POLL_TIMEOUT_MS = 2000
  let service: RunningRulesService
  let proxy: Awaited<ReturnType<typeof faultProxy>>
  let host: FastifyInstance
  const statuses: number[] = []
  const warnings: string[] = []
  const infos: string[] = []
  const errors: string[] = []
  let attempts = 0
  const rulesUrl = () => `${proxy.url}/v1/services/checkout/ruleset`
  const api = `/v1/services/checkout/rules`

  const write = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${service.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${TOKENS.admin}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    expect(res.status, `${method} ${path}: ${await res.clone().text()}`).toBeLessThan(300)
    return (await res.json()) as { revision: number }
  }
  const hit = async (url = '/orders') => (await host.inject({ method: 'GET', url })).statusCode

  beforeAll(async () => {
    service = await startRulesService({
      port: 0,
      services: ['checkout'],
      tokens: [
        { name: 'ops', role: 'admin', token: TOKENS.admin },
        { name: 'hosts', role: 'read', token: TOKENS.reader },
      ],
    })
    proxy = await faultProxy(() => service.url)
    // No logger is given to the source or the plugin: what the source reports reaches
    // Fastify's own pino logger, failures at warn (and error for a refused set), recovery at info.
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const text of chunk.toString('utf8').split('\n')) {
          if (!text) continue
          const entry = JSON.parse(text) as {
            level: number
            msg?: string
            err?: { message?: string }
          }
          const line = `${entry.msg ?? ''} ${entry.err?.message ?? ''}`
          if (entry.level >= 50) errors.push(line)
          else if (entry.level === 40) warnings.push(line)
          else if (entry.level === 30 && /^rules/.test(entry.msg ?? '')) infos.push(line)
        }
        done()
      },
    })
    const source = httpRules(rulesUrl(), {
      intervalMs: INTERVAL_MS,
      jitter: 0.1,
      timeoutMs: POLL_TIMEOUT_MS,
      headers: { authorization: `Bearer ${TOKENS.reader}` },
      fetch: async (input, init) => {
        attempts++
        const res = await fetch(input, init)
        statuses.push(res.status)
        return res
      },
    })
    host = Fastify({ logger: { level: 'info', stream } })
    await host.register(rateLimit, { rules: source })
    host.get('/orders', () => ({ ok: true }))
    host.get('/search', () => ({ ok: true }))
    await host.ready()
  })

  afterAll(async () => {
    await host?.close()
    await proxy?.close()
    await service?.stop().catch(() => {})
  })

  it('enforces a rule created through the API within one poll, and stops when it is deleted', async () => {
    expect(await hit()).toBe(200)
    expect(await hit()).toBe(200)
    await waitFor(() => statuses.length > 0, 'the first poll', DEADLINE_MS)
    const changedPolls = () => statuses.filter((status) => status === 200).length
    const before = changedPolls()
    const { revision } = await write('POST', `${api}`, {
      id: 'orders',
      match: 'GET /orders',
      limit: 1,
      window: '1h',
    })
    expect(revision).toBe(1)
    // The first request after the swap uses the one allowed; the next one is refused.
    await waitFor(async () => (await hit()) === 429, 'the new rule to be enforced', DEADLINE_MS)
    // Polls that started before the write got 304s: the very first poll to see the change
    // (the one 200) applied it — "within one interval".
    expect(changedPolls() - before).toBe(1)

    await write('DELETE', `${api}/orders`)
    await waitFor(async () => (await hit()) === 200, 'the deleted rule to stop', DEADLINE_MS)
    expect(changedPolls() - before).toBe(2)
    expect(await hit()).toBe(200)
    expect(await hit()).toBe(200)
  })

  it('costs a 304 per poll while nothing changes', async () => {
    const before = statuses.filter((s) => s === 304).length
    await waitFor(
      () => statuses.filter((s) => s === 304).length >= before + 3,
      'three 304 polls',
      DEADLINE_MS,
    )
    expect(statuses.filter((s) => s >= 400)).toEqual([])
  })

  it('enforces a deny list created through the API: 403 within one poll, lifted when the rule goes', async () => {
    expect(await hit()).toBe(200)
    await write('POST', api, {
      id: 'blocked',
      match: 'GET /orders',
      limit: 100,
      window: '1m',
      deny: { ips: ['127.0.0.0/8', '::1'] },
    })
    await waitFor(async () => (await hit()) === 403, 'the deny list to be enforced', DEADLINE_MS)
    // Only where the rule applies.
    expect(await hit('/search')).toBe(200)
    await write('DELETE', `${api}/blocked`)
    await waitFor(async () => (await hit()) === 200, 'the deny list to be lifted', DEADLINE_MS)
  })

  it('keeps the counters of unchanged rules across a swap', async () => {
    await write('POST', api, { id: 'orders', match: 'GET /orders', limit: 2, window: '1h' })
    await waitFor(async () => (await hit()) === 429, 'the orders rule', DEADLINE_MS)
    // The orders bucket is empty now. Another rule arrives; orders must stay empty.
    await write('POST', api, { id: 'search', match: 'GET /search', limit: 1, window: '1h' })
    await waitFor(async () => (await hit('/search')) === 429, 'the search rule', DEADLINE_MS)
    expect(await hit()).toBe(429)
  })

  it('keeps the last rules through garbage and a stalled service, logging each once', async () => {
    expect(warnings).toEqual([])
    proxy.mode = 'garbage'
    await waitFor(() => warnings.length === 1, 'the garbage to be noticed', DEADLINE_MS)
    expect(warnings[0]).toMatch(/rules source failed.*not JSON/)
    let seen = attempts
    await waitFor(() => attempts >= seen + 3, 'three more polls', DEADLINE_MS)
    expect(warnings).toHaveLength(1)
    expect(await hit('/search')).toBe(429)

    proxy.mode = 'slow'
    await waitFor(() => warnings.length === 2, 'the stall to be noticed', DEADLINE_MS)
    expect(warnings[1]).toMatch(new RegExp(`within ${POLL_TIMEOUT_MS} ms`))
    seen = attempts
    await waitFor(() => attempts >= seen + 2, 'two more polls', DEADLINE_MS)
    expect(warnings).toHaveLength(2)
    expect(await hit('/search')).toBe(429)

    proxy.mode = 'pass'
    await waitFor(() => infos.some((m) => /recovered/.test(m)), 'the recovery', DEADLINE_MS)
    expect(await hit('/search')).toBe(429)
    // Failed polls with the rules kept are warnings, not errors.
    expect(errors).toEqual([])
  })

  it('keeps enforcing the last rules when the service stops, and logs the failure once', async () => {
    expect(await hit('/search')).toBe(429)
    const before = warnings.length
    await service.stop()
    const answered = statuses.length
    await waitFor(() => warnings.length > before, 'the poller to notice', DEADLINE_MS)
    expect(warnings[before]).toMatch(/rules source failed/)
    // Several more failed polls: still one warning, still enforced.
    const failed = attempts
    await waitFor(() => attempts >= failed + 3, 'three more polls', DEADLINE_MS)
    expect(statuses.length).toBe(answered)
    expect(warnings).toHaveLength(before + 1)
    expect(await hit('/search')).toBe(429)
    expect(await hit()).toBe(429)
  })
})
