import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { zeroCounts } from '../../limiter-counters.js'
import type { Rule } from '../rule.js'
import { closedAfterEach } from './http-rules.test-util.js'
import { httpRules } from './http-rules.js'

// A rules endpoint that redirects: the poller follows, but the headers it was given (tokens,
// API keys) go only to the origin it was configured with. Fetch itself drops `authorization`
// and `cookie` on a hop to another origin, and forwards every other header.

const RULES = JSON.stringify({ rules: [{ id: 'api', limit: 5, window: '1s' }] })

interface Hop {
  /** Which server answers: 0 or 1 (two origins: two ports on loopback). */
  readonly server: 0 | 1
  /** Where it redirects next, or undefined to answer with the rules. */
  readonly status?: 301 | 302 | 303 | 307 | 308
}

const { servers, sources } = closedAfterEach()

/**
 * Two servers; the request for `/hop/i` is answered by hop i of `hops`: a redirect to
 * `/hop/i+1` on the server of hop i+1, or the rules.
 */
async function chain(hops: readonly Hop[]) {
  const seen: { server: number; path: string; headers: IncomingHttpHeaders }[] = []
  const urls: string[] = []
  for (const index of [0, 1]) {
    const server = createServer((req, res) => {
      seen.push({ server: index, path: req.url ?? '', headers: req.headers })
      const i = Number(/^\/hop\/(\d+)/.exec(req.url ?? '')?.[1] ?? -1)
      const hop = hops[i]
      if (hop?.status !== undefined && hops[i + 1] !== undefined) {
        res.statusCode = hop.status
        res.setHeader('location', `${urls[hops[i + 1]!.server]}/hop/${i + 1}`)
        return res.end()
      }
      res.setHeader('content-type', 'application/json')
      res.setHeader('etag', '"1"')
      res.end(RULES)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    servers.push(server)
    // Two names of loopback, so the two servers are two origins whatever their ports.
    const host = index === 0 ? '127.0.0.1' : 'localhost'
    urls.push(`http://${host}:${(server.address() as AddressInfo).port}`)
  }
  return { seen, start: `${urls[hops[0]!.server]}/hop/0` }
}

async function pollOnce(url: string) {
  const source = httpRules(url, {
    intervalMs: 3_600_000,
    headers: { 'x-api-key': 'secret-key', authorization: 'Bearer secret-token' },
  })
  sources.push(source)
  const delivered: Rule[][] = []
  const errors: Error[] = []
  await source.start(
    (rules) => delivered.push(rules),
    (err) => errors.push(err),
  )
  return { delivered, errors }
}

describe('httpRules and redirects', () => {
  it('sends its headers to a redirect on its own origin, and none of them to another origin', async () => {
    const { seen, start } = await chain([{ server: 0, status: 302 }, { server: 1 }])
    const { delivered, errors } = await pollOnce(start)
    expect(errors).toEqual([])
    expect(delivered).toHaveLength(1)
    expect(seen.map((s) => s.server)).toEqual([0, 1])
    expect(seen[0]!.headers['x-api-key']).toBe('secret-key')
    expect(seen[1]!.headers['x-api-key']).toBeUndefined()
    expect(seen[1]!.headers.authorization).toBeUndefined()
  })

  it('never hands a configured header to another origin, whatever the chain of redirects (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            server: fc.constantFrom<0 | 1>(0, 1),
            status: fc.constantFrom<301 | 302 | 303 | 307 | 308>(301, 302, 303, 307, 308),
          }),
          { minLength: 1, maxLength: 6 },
        ),
        fc.constantFrom<0 | 1>(0, 1),
        async (redirects, last) => {
          const hops: Hop[] = [...redirects, { server: last }]
          const { seen, start } = await chain(hops)
          const { delivered, errors } = await pollOnce(start)
          expect(errors).toEqual([])
          expect(delivered).toHaveLength(1)
          expect(seen).toHaveLength(hops.length)
          const home = hops[0]!.server
          for (const s of seen) {
            // Model: the key travels to the configured origin only, and only until the chain
            // has left it once (a hop back is a place the other origin chose).
            const left = seen.slice(0, seen.indexOf(s)).some((p) => p.server !== home)
            const expected = s.server === home && !left ? 'secret-key' : undefined
            expect(s.headers['x-api-key'], JSON.stringify(hops)).toBe(expected)
          }
          for (const s of sources.splice(0)) s.stop()
          for (const s of servers.splice(0)) {
            s.closeAllConnections()
            await new Promise((resolve) => s.close(resolve))
          }
        },
      ),
      { numRuns: 25 },
    )
  })

  it('gives up on a chain of more than 20 redirects and keeps the rules', async () => {
    const hops: Hop[] = Array.from({ length: 25 }, (_, i) => ({
      server: 0,
      status: i < 24 ? 302 : undefined,
    }))
    const { seen, start } = await chain(hops)
    const { delivered, errors } = await pollOnce(start)
    expect(delivered).toEqual([])
    expect(errors).toHaveLength(1)
    expect(errors[0]!.message).toMatch(/redirect/i)
    expect(seen.length).toBeLessThanOrEqual(21)
  })

  it('does not follow a redirect of the report POST: the report counts as refused and the poll goes plainly', async () => {
    const seen: { server: number; method: string }[] = []
    const ports: number[] = []
    for (const index of [0, 1]) {
      const server = createServer((req, res) => {
        req.resume()
        seen.push({ server: index, method: req.method ?? '' })
        if (req.method === 'POST') {
          res.statusCode = 307
          res.setHeader('location', `http://localhost:${ports[1]}/report`)
          return res.end()
        }
        res.setHeader('etag', `"${seen.length}"`)
        res.end(RULES)
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      servers.push(server)
      ports.push((server.address() as AddressInfo).port)
    }
    const source = httpRules(`http://127.0.0.1:${ports[0]}/v1/services/api/ruleset`, {
      intervalMs: 3_600_000,
      report: true,
    })
    sources.push(source)
    await source.start(
      () => {},
      () => {},
      { counters: () => ({ total: zeroCounts(), byRule: new Map(), inFlight: new Map() }) },
    )
    await source.poll()
    expect(seen).toEqual([
      { server: 0, method: 'GET' },
      { server: 0, method: 'POST' },
      { server: 0, method: 'GET' },
    ])
  })
})
