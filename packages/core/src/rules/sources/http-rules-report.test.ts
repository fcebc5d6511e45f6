import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
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

  it('sends again the counts of a report answered 200 by something that is not the service (HTML, a bad set)', async () => {
    // A proxy's maintenance page or a login screen answered with 200 never reached the
    // service: taking it as the report's receipt lost those counts for good.
    type Answer = 'set' | 'html' | 'invalid' | 'not modified'
    let answer: Answer = 'set'
    const posts: string[] = []
    const server = createServer((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => (body += c.toString()))
      req.on('end', () => {
        if (req.method === 'POST') posts.push(body)
        res.setHeader('etag', '"1"')
        if (answer === 'not modified') {
          res.statusCode = 304
          return res.end()
        }
        if (answer === 'html') {
          res.setHeader('content-type', 'text/html')
          return res.end('<html><body>Down for maintenance</body></html>')
        }
        res.setHeader('content-type', 'application/json')
        const limit = answer === 'invalid' ? -1 : 5
        res.end(JSON.stringify({ rules: [{ id: 'api', limit, window: '1s' }] }))
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    servers.push(server)
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/services/api/ruleset`
    const errors: Error[] = []
    const source = httpRules(url, { intervalMs: 3_600_000, report: { host: 'web-1' } })
    sources.push(source)
    const counts = new Map([['api', { ...zeroCounts(), rejected: 2 }]])
    await source.start(
      () => {},
      (e) => errors.push(e),
      limiterWith(counts),
    )
    answer = 'html'
    await source.poll()
    counts.set('api', { ...zeroCounts(), rejected: 3 })
    answer = 'invalid'
    await source.poll()
    expect(errors).toHaveLength(2)
    counts.set('api', { ...zeroCounts(), rejected: 4 })
    answer = 'not modified'
    await source.poll()
    counts.set('api', { ...zeroCounts(), rejected: 6 })
    await source.poll()
    const sent = posts.map((b) => (JSON.parse(b) as { rules: { counts: DecisionCounts }[] }).rules)
    // Counts since the last report answered by the service: 2, 3, 4, then 6 - 4.
    expect(sent.map((r) => r[0]?.counts.rejected)).toEqual([2, 3, 4, 2])
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

describe('httpRules with report: what counts as received (property)', () => {
  // Model: each report carries the counts since the last report whose answer was the
  // service's (a 304, or a valid set); an answer that is not (HTML, an invalid set, a 5xx, or a
  // refusal of the report, after which the poll goes plainly) leaves its counts for the next.
  type Answer = 'set' | 'html' | 'invalid' | 'not modified' | 'unavailable' | 'refused'
  const answers: readonly Answer[] = [
    'set',
    'html',
    'invalid',
    'not modified',
    'unavailable',
    'refused',
  ]
  const RECEIPTS: ReadonlySet<Answer> = new Set(['set', 'not modified'])

  it('resends exactly the counts no receipt covered', async () => {
    let answer: Answer = 'set'
    const posts: string[] = []
    const server = createServer((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => (body += c.toString()))
      req.on('end', () => {
        if (req.method === 'POST') posts.push(body)
        // A refused report is followed by a plain poll, answered with the set.
        const a = req.method === 'GET' && answer === 'refused' ? 'set' : answer
        res.setHeader('etag', '"1"')
        if (a === 'not modified' || a === 'unavailable' || a === 'refused') {
          res.statusCode = a === 'not modified' ? 304 : a === 'unavailable' ? 503 : 400
          return res.end()
        }
        if (a === 'html') {
          res.setHeader('content-type', 'text/html')
          return res.end('<html>Bad gateway</html>')
        }
        res.setHeader('content-type', 'application/json')
        res.end(
          JSON.stringify({ rules: [{ id: 'api', limit: a === 'set' ? 5 : -1, window: '1s' }] }),
        )
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    servers.push(server)
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/services/api/ruleset`
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({ answer: fc.constantFrom(...answers), more: fc.integer({ min: 1, max: 9 }) }),
          { minLength: 1, maxLength: 12 },
        ),
        async (polls) => {
          answer = 'set'
          posts.length = 0
          const source = httpRules(url, { intervalMs: 3_600_000, report: { host: 'web-1' } })
          sources.push(source)
          let total = 0
          const counts = new Map([['api', { ...zeroCounts() }]])
          await source.start(
            () => {},
            () => {},
            limiterWith(counts),
          )
          let received = 0
          const expected: number[] = []
          for (const p of polls) {
            total += p.more
            counts.set('api', { ...zeroCounts(), rejected: total })
            answer = p.answer
            await source.poll()
            expected.push(total - received)
            if (RECEIPTS.has(p.answer)) received = total
          }
          source.stop()
          const sent = posts.map(
            (b) => (JSON.parse(b) as { rules: { counts: DecisionCounts }[] }).rules[0]?.counts,
          )
          expect(sent.map((c) => c?.rejected)).toEqual(expected)
        },
      ),
      { numRuns: 40 },
    )
  })
})
