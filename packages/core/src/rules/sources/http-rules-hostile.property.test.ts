import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { Logger } from '../../logger.js'
import { httpRules } from './http-rules.js'

// A rules service that answers anything, over real HTTP on loopback: good sets, rules that fail
// validation, bodies cut off mid-way, bodies past maxBytes, HTML from a proxy, 5xx. Model: the
// rules in force are the last good set; a set is delivered only when it differs from the one in
// force; each failure is reported (and logged, one line) only when it differs from the failure
// of the poll before, and a good answer after failures logs one recovery.

const MAX_BYTES = 2048

type Answer =
  | { kind: 'good'; n: number }
  | { kind: 'invalid' }
  | { kind: 'truncated' }
  | { kind: 'huge' }
  | { kind: 'html' }
  | { kind: 'error' }

const answer: fc.Arbitrary<Answer> = fc.oneof(
  fc.record({ kind: fc.constant('good' as const), n: fc.integer({ min: 1, max: 3 }) }),
  fc.constant({ kind: 'invalid' as const }),
  fc.constant({ kind: 'truncated' as const }),
  fc.constant({ kind: 'huge' as const }),
  fc.constant({ kind: 'html' as const }),
  fc.constant({ kind: 'error' as const }),
)

const setOf = (n: number): string =>
  JSON.stringify({ service: 'api', revision: n, rules: [{ id: 'api', limit: n, window: '1s' }] })

let script: Answer[] = []
let server: Server
let url: string

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume()
    const a = script.shift() ?? { kind: 'error' }
    switch (a.kind) {
      case 'good':
        res.setHeader('etag', `"g${a.n}"`)
        res.setHeader('content-type', 'application/json')
        return res.end(setOf(a.n))
      case 'invalid':
        res.setHeader('etag', '"bad"')
        return res.end(JSON.stringify({ rules: [{ id: 'x', limit: -1, window: '1s' }] }))
      case 'truncated': {
        // Promises 1000 bytes, sends 20, and hangs up.
        res.setHeader('content-length', '1000')
        res.write(setOf(1).slice(0, 20))
        setImmediate(() => res.socket?.destroy())
        return
      }
      case 'huge':
        // Chunked, no length: the poller only finds out by reading.
        res.write('{"rules": [' + ' '.repeat(MAX_BYTES))
        return res.end(']}')
      case 'html':
        res.setHeader('content-type', 'text/html')
        return res.end('<html><body>Sign in to the network</body></html>')
      case 'error':
        res.statusCode = 500
        return res.end('oops')
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/services/api/ruleset`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

describe('httpRules against hostile answers (property)', () => {
  it('keeps the last good set, delivers only changes, reports and logs each failure once and the recovery once', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(answer, { minLength: 1, maxLength: 10 }), async (answers) => {
        script = [...answers]
        const logger = {
          debug: vi.fn(),
          info: vi.fn(),
          warn: vi.fn(),
          error: vi.fn(),
        } satisfies Logger
        const source = httpRules(url, { intervalMs: 3_600_000, maxBytes: MAX_BYTES, logger })
        const delivered: number[] = []
        const errors: string[] = []
        const recoveries: number[] = []
        try {
          await source.start(
            (rules) => delivered.push(rules[0]!.limit),
            (err) => errors.push(err.message),
            undefined,
            () => recoveries.push(delivered.length),
          )
          for (let i = 1; i < answers.length; i++) await source.poll()
        } finally {
          source.stop()
        }
        // The model.
        const want = { delivered: [] as number[], reports: 0, recoveries: 0 }
        let inForce: number | undefined
        let lastFailure: string | undefined
        for (const a of answers) {
          if (a.kind === 'good') {
            if (a.n !== inForce) want.delivered.push(a.n)
            inForce = a.n
            if (lastFailure !== undefined) want.recoveries++
            lastFailure = undefined
          } else {
            if (a.kind !== lastFailure) want.reports++
            lastFailure = a.kind
          }
        }
        expect(delivered, JSON.stringify(answers)).toEqual(want.delivered)
        expect(errors, JSON.stringify(answers)).toHaveLength(want.reports)
        expect(recoveries, JSON.stringify(answers)).toHaveLength(want.recoveries)
        // One log line per report, one per recovery.
        expect(logger.warn).toHaveBeenCalledTimes(want.reports)
        expect(logger.info).toHaveBeenCalledTimes(want.recoveries)
      }),
      { numRuns: 60 },
    )
  })
})
