import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { zeroCounts, type DecisionCounts } from '../../limiter-counters.js'
import type { ReportingLimiter } from './host-report.js'
import { closedAfterEach } from './http-rules.test-util.js'
import { httpRules } from './http-rules.js'

interface Seen {
  method: string
  url: string
  headers: IncomingHttpHeaders
  body: string
}

/** A rules endpoint that records every request and answers with `status()` (200 or 304). */
async function endpoint(status: () => number) {
  const seen: Seen[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => (body += c.toString()))
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body })
      const code = status()
      res.statusCode = code
      res.setHeader('etag', '"1"')
      if (code !== 200) return res.end()
      res.setHeader('content-type', 'application/json')
      res.end(
        JSON.stringify({
          service: 'api',
          revision: 1,
          rules: [{ id: 'api', limit: 5, window: '1s' }],
        }),
      )
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  servers.push(server)
  return { seen, url: `http://127.0.0.1:${port}/v1/services/api/ruleset` }
}

const { servers, sources } = closedAfterEach()

function limiterWith(counts: Map<string, DecisionCounts>): ReportingLimiter {
  return { counters: () => ({ total: zeroCounts(), byRule: counts, inFlight: new Map() }) }
}

describe('httpRules with report', () => {
  it('polls plainly first, then POSTs the report to …/report with the same headers and ETag', async () => {
    const { seen, url } = await endpoint(() => 200)
    const source = httpRules(url, {
      intervalMs: 3_600_000,
      headers: { authorization: 'Bearer host-token-0123456789' },
      report: { host: 'web-1' },
    })
    sources.push(source)
    const counts = new Map([['api', { ...zeroCounts(), allowed: 4, rejected: 1 }]])
    await source.start(
      () => {},
      () => {},
      limiterWith(counts),
    )
    await source.poll()
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'GET /v1/services/api/ruleset',
      'POST /v1/services/api/report',
    ])
    const post = seen[1]!
    expect(post.headers).toMatchObject({
      authorization: 'Bearer host-token-0123456789',
      'content-type': 'application/json',
      'if-none-match': '"1"',
    })
    expect(JSON.parse(post.body)).toMatchObject({
      host: 'web-1',
      rules: [{ id: 'api', counts: { allowed: 4, rejected: 1 }, top: [] }],
    })
  })

  it('sends again, with the next report, the counts of one the service did not accept', async () => {
    let answer = 200
    const { seen, url } = await endpoint(() => answer)
    const errors: Error[] = []
    const source = httpRules(url, { intervalMs: 3_600_000, report: { host: 'web-1' } })
    sources.push(source)
    const counts = new Map([['api', { ...zeroCounts(), rejected: 2 }]])
    await source.start(
      () => {},
      (e) => errors.push(e),
      limiterWith(counts),
    )
    answer = 503
    await source.poll()
    expect(errors).toHaveLength(1)
    counts.set('api', { ...zeroCounts(), rejected: 5 })
    answer = 304
    await source.poll()
    counts.set('api', { ...zeroCounts(), rejected: 6 })
    await source.poll()
    const bodies = seen.filter((s) => s.method === 'POST').map((s) => JSON.parse(s.body))
    expect(bodies.map((b) => b.rules[0]?.counts.rejected)).toEqual([2, 5, 1])
  })

  it('does not report without the option', async () => {
    const { seen, url } = await endpoint(() => 200)
    const source = httpRules(url, { intervalMs: 3_600_000 })
    sources.push(source)
    await source.start(
      () => {},
      () => {},
      limiterWith(new Map([['api', { ...zeroCounts(), allowed: 1 }]])),
    )
    await source.poll()
    expect(seen.map((s) => s.method)).toEqual(['GET', 'GET'])
  })
})
