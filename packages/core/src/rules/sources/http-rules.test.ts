import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { FloodgateError, OptionsError, RulesValidationError } from '../../errors.js'
import type { Logger } from '../../logger.js'
import type { Rule, RuleMatch } from '../rule.js'
import { httpRules, jitteredDelay, type HttpRulesSource } from './http-rules.js'

type Mode = 'ok' | 'garbage' | 'html' | 'invalid' | 'error' | 'hang' | 'bare' | 'duplicate'

interface Fake {
  server: Server
  url: string
  port: number
  mode: Mode
  revision: number
  limit: number
  description: string
  requests: IncomingHttpHeaders[]
  notModified: number
}

function listen(fake: Partial<Fake> & { port?: number } = {}): Promise<Fake> {
  const state = {
    mode: 'ok',
    revision: 1,
    limit: 10,
    description: '',
    requests: [] as IncomingHttpHeaders[],
    notModified: 0,
    ...fake,
  } as Fake
  const server = createServer((req, res) => {
    state.requests.push(req.headers)
    const etag = `"rev-${state.revision}"`
    switch (state.mode) {
      case 'hang':
        return // never answers; the client's timeout must fire
      case 'error':
        res.statusCode = 500
        return res.end('oops')
      case 'garbage':
        res.setHeader('content-type', 'application/json')
        return res.end('{"rules": [ this is not json')
      case 'html':
        // A 200 from something in front of the service (a login page, a proxy's notice).
        res.setHeader('content-type', 'text/html; charset=utf-8')
        return res.end('<!doctype html><title>Sign in</title>')
      case 'invalid':
        res.setHeader('etag', '"bad"')
        return res.end(
          JSON.stringify({
            service: 'api',
            revision: 'bad',
            rules: [{ id: 'x', limit: -1, window: '1s' }],
          }),
        )
      case 'bare':
        return res.end(JSON.stringify([{ id: 'bare', limit: 3, window: '1s' }]))
      case 'duplicate':
        // Valid JSON, but which limit counts depends on the parser: JSON.parse keeps the last.
        res.setHeader('etag', '"dup"')
        return res.end('{"rules":[{"id":"api","limit":1,"window":"1s","limit":1000}]}')
      case 'ok':
        if (req.headers['if-none-match'] === etag) {
          state.notModified++
          res.statusCode = 304
          return res.end()
        }
        res.setHeader('etag', etag)
        res.setHeader('content-type', 'application/json')
        return res.end(
          JSON.stringify({
            service: 'api',
            revision: String(state.revision),
            rules: [
              { id: 'api', limit: state.limit, window: '1s', description: state.description },
            ],
          }),
        )
    }
  })
  state.server = server
  return new Promise((resolve) => {
    server.listen(fake.port ?? 0, '127.0.0.1', () => {
      state.port = (server.address() as AddressInfo).port
      state.url = `http://127.0.0.1:${state.port}/v1/services/api/ruleset?token=secret`
      resolve(state)
    })
  })
}

function close(fake: Fake): Promise<void> {
  fake.server.closeAllConnections()
  return new Promise((resolve) => fake.server.close(() => resolve()))
}

function spyLogger() {
  return { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() } satisfies Logger
}

const servers: Fake[] = []
const sources: HttpRulesSource[] = []

afterEach(async () => {
  vi.useRealTimers()
  for (const s of sources.splice(0)) s.stop()
  for (const f of servers.splice(0)) if (f.server.listening) await close(f)
})

async function setup(options: Parameters<typeof httpRules>[1] = {}) {
  const fake = await listen()
  servers.push(fake)
  const logger = spyLogger()
  // A long interval: these tests poll by hand, so nothing depends on timing.
  const source = httpRules(fake.url, { intervalMs: 60_000, logger, ...options })
  sources.push(source)
  const delivered: { rules: Rule[]; revision: string | undefined }[] = []
  const errors: Error[] = []
  const recoveries: number[] = []
  await source.start(
    (rules, revision) => delivered.push({ rules, revision }),
    (err) => errors.push(err),
    undefined,
    () => recoveries.push(delivered.length),
  )
  return { fake, logger, source, delivered, errors, recoveries }
}

describe('httpRules', () => {
  it('loads on start, then an unchanged revision costs a 304', async () => {
    const { fake, source, delivered, errors } = await setup({
      headers: { authorization: 'Bearer t' },
    })
    expect(errors).toEqual([])
    expect(delivered).toHaveLength(1)
    expect(delivered[0]!.revision).toBe('1')
    expect(delivered[0]!.rules.map((r) => [r.id, r.limit])).toEqual([['api', 10]])
    expect(fake.requests[0]!.authorization).toBe('Bearer t')
    expect(fake.requests[0]!['if-none-match']).toBeUndefined()

    await source.poll()
    await source.poll()
    expect(fake.requests[1]!['if-none-match']).toBe('"rev-1"')
    expect(fake.notModified).toBe(2)
    expect(delivered).toHaveLength(1)
  })

  it('applies a changed rule set', async () => {
    const { fake, source, delivered } = await setup()
    fake.revision = 2
    fake.limit = 20
    await source.poll()
    expect(delivered).toHaveLength(2)
    expect(delivered[1]!.revision).toBe('2')
    expect(delivered[1]!.rules[0]!.limit).toBe(20)
  })

  it('accepts a bare list, with the ETag or nothing as revision', async () => {
    const { fake, source, delivered } = await setup()
    fake.mode = 'bare'
    await source.poll()
    expect(delivered[1]!.rules.map((r) => r.id)).toEqual(['bare'])
    expect(delivered[1]!.revision).toBeUndefined()
    // The same body again (no ETag support on the server) is not re-applied.
    await source.poll()
    expect(delivered).toHaveLength(2)
  })

  /**
   * Starts an httpRules source against a server answering with `handle`, runs `during` (the
   * polls a test makes after start), then closes the server; returns what the source handed
   * over: rule sets, errors and recoveries (the count of sets delivered by then).
   */
  async function pollServer(
    handle: (req: IncomingMessage, res: ServerResponse) => void,
    during: (source: HttpRulesSource, errors: Error[]) => Promise<void>,
  ) {
    const server = createServer(handle)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const source = httpRules(
      `http://127.0.0.1:${(server.address() as AddressInfo).port}/rules.json`,
      { intervalMs: 60_000 },
    )
    sources.push(source)
    const delivered: Rule[][] = []
    const errors: Error[] = []
    const recoveries: number[] = []
    try {
      await source.start(
        (rules) => delivered.push(rules),
        (err) => errors.push(err),
        undefined,
        () => recoveries.push(delivered.length),
      )
      await during(source, errors)
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
    return { delivered, errors, recoveries }
  }

  it('reads a body with a byte order mark (a rules file served as is)', async () => {
    const bodies = [
      Buffer.from(`\uFEFF${JSON.stringify([{ id: 'utf8', rate: '10/s' }])}`, 'utf8'),
      Buffer.from(`\uFEFF${JSON.stringify([{ id: 'utf16', rate: '10/s' }])}`, 'utf16le'),
    ]
    const { delivered, errors } = await pollServer(
      (_req, res) => res.end(bodies.shift()),
      (source) => source.poll(),
    )
    expect(errors).toEqual([])
    expect(delivered.map((rules) => rules.map((r) => r.id))).toEqual([['utf8'], ['utf16']])
  })

  it('refuses a body that is not UTF-8, keeping the rules and naming where it breaks', async () => {
    const rule = { id: 'city', rate: '10/s', match: { headers: { 'x-city': 'caf\u00e9' } } }
    const bodies = [
      Buffer.from(JSON.stringify([rule]), 'utf8'),
      // The same set served as Latin-1: 'é' is the one byte 0xE9.
      Buffer.from(JSON.stringify([{ ...rule, rate: '5/s' }]), 'latin1'),
    ]
    const { delivered, errors } = await pollServer(
      (_req, res) => res.end(bodies.length > 1 ? bodies.shift() : bodies[0]),
      async (source) => {
        await source.poll()
        await source.poll()
      },
    )
    expect(delivered.map((rules) => (rules[0]!.match as RuleMatch).headers)).toEqual([
      { 'x-city': 'caf\u00e9' },
    ])
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringMatching(
        /^rules from http:\/\/127\.0\.0\.1:\d+\/rules\.json: body is not valid UTF-8 at line 1, column 61 \(byte 60\)/,
      ),
    ])
  })

  it('takes a 304 to a poll without If-None-Match as a failure, not as rules kept', async () => {
    // A cache or proxy that answers 304 for a copy this host never received.
    let status = 304
    const { delivered, recoveries } = await pollServer(
      (_req, res) => {
        res.statusCode = status
        res.end(status === 200 ? JSON.stringify([{ id: 'a', rate: '10/s' }]) : undefined)
      },
      async (source, errors) => {
        expect(errors.map((e) => e.message)).toEqual([
          expect.stringContaining('HTTP 304 Not Modified to a poll without If-None-Match'),
        ])
        status = 200
        await source.poll()
      },
    )
    expect(delivered.map((rules) => rules.map((r) => r.id))).toEqual([['a']])
    expect(recoveries).toEqual([1])
  })

  it('keeps the rules when the server is down, logs once, and logs the recovery', async () => {
    const { fake, source, delivered, errors, logger, recoveries } = await setup()
    await close(fake)
    await source.poll()
    await source.poll()
    await source.poll()
    expect(delivered).toHaveLength(1)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toBeInstanceOf(FloodgateError)
    expect((errors[0] as FloodgateError).code).toBe('FG_ERR_RULES_SOURCE')
    expect(errors[0]!.message).toMatch(
      /^rules from http:\/\/127\.0\.0\.1:\d+\/v1\/services\/api\/ruleset: fetch failed/,
    )
    // The token in the query string is never logged.
    expect(errors[0]!.message).not.toContain('secret')
    expect(logger.warn).toHaveBeenCalledTimes(1)

    const back = await listen({ port: fake.port, revision: 3 })
    servers.push(back)
    await source.poll()
    expect(delivered.map((d) => d.revision)).toEqual(['1', '3'])
    expect(logger.info).toHaveBeenCalledWith(
      expect.objectContaining({ source: expect.any(String) }),
      'rules source recovered',
    )
    // The limiter's callback too, once, after the poll that brought revision 3.
    expect(recoveries).toEqual([2])
    await source.poll()
    expect(recoveries).toEqual([2])
  })

  it('keeps the rules on HTTP errors, garbage and invalid rules, reporting each distinct failure once', async () => {
    const { fake, source, delivered, errors, logger } = await setup()
    fake.mode = 'error'
    await source.poll()
    await source.poll()
    fake.mode = 'garbage'
    await source.poll()
    await source.poll()
    fake.mode = 'html'
    await source.poll()
    fake.mode = 'invalid'
    await source.poll()
    await source.poll()
    expect(delivered).toHaveLength(1)
    expect(errors.map((e) => e.message.replace(/ \(FG_ERR.*$/, ''))).toEqual([
      expect.stringMatching(/: HTTP 500$/),
      expect.stringMatching(/: body is not JSON \("\{\\"rules\\": \[ this is not json"\)$/),
      // A body that says it is not JSON is named by its type too.
      expect.stringMatching(
        /: body is not JSON \(content-type "text\/html; charset=utf-8": "<!doctype html><title>Sign in<\/title>"\)$/,
      ),
      'rules[0].limit: expected a positive integer, got -1',
    ])
    expect(errors[3]).toBeInstanceOf(RulesValidationError)
    expect(logger.warn).toHaveBeenCalledTimes(4)
    // An invalid body's ETag is not remembered: the next poll asks for the whole body again.
    expect(fake.requests.at(-1)!['if-none-match']).toBe('"rev-1"')

    fake.mode = 'ok'
    fake.revision = 2
    await source.poll()
    expect(delivered).toHaveLength(2)
  })

  it('refuses a body that gives a key twice in one object, naming it, and keeps the rules', async () => {
    const { fake, source, delivered, errors } = await setup()
    fake.mode = 'duplicate'
    await source.poll()
    expect(delivered).toHaveLength(1)
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringMatching(
        /: body gives a key twice in one object, at rules\[0\]\.limit \(which value counts would depend on the parser\); give each key once \(FG_ERR_RULES_SOURCE/,
      ),
    ])
    expect(fake.requests.at(-1)!['if-none-match']).toBe('"rev-1"')
  })

  it('refuses a body larger than maxBytes and keeps the rules', async () => {
    const { fake, source, delivered, errors } = await setup({ maxBytes: 100 })
    fake.revision = 2
    fake.description = 'x'.repeat(200)
    await source.poll()
    expect(delivered).toHaveLength(1)
    expect(errors[0]!.message).toMatch(/body (of \d+ bytes )?exceeds maxBytes \(100\)/)
  })

  it('gives up on a slow server after timeoutMs and keeps the rules', async () => {
    // Long enough for the first poll, of a healthy server, on a busy machine: at 50 ms it
    // missed it, and nothing was delivered to keep.
    const { fake, source, delivered, errors } = await setup({ timeoutMs: 2000 })
    fake.mode = 'hang'
    await source.poll()
    expect(delivered).toHaveLength(1)
    expect(errors).toHaveLength(1)
    expect(errors[0]!.message).toMatch(/no complete answer within 2000 ms/)
  })

  it('keeps its deadline when a fetch or its body ignores the signal, and polls on', async () => {
    // The app's own fetch: one that never answers, and one whose body never ends.
    const silent = () => new Promise<Response>(() => {})
    const endless = () =>
      Promise.resolve(
        new Response(new ReadableStream({ pull: () => new Promise<void>(() => {}) }), {
          status: 200,
        }),
      )
    for (const fetchImpl of [silent, endless]) {
      const source = httpRules('http://127.0.0.1:9/rules', {
        intervalMs: 60_000,
        timeoutMs: 50,
        fetch: fetchImpl,
        logger: spyLogger(),
      })
      sources.push(source)
      const errors: Error[] = []
      await source.start(
        () => {},
        (err) => errors.push(err),
      )
      expect(errors[0]!.message).toMatch(/no complete answer within 50 ms/)
      // The next poll runs too: nothing is left waiting on the first.
      await source.poll()
      expect(errors).toHaveLength(1)
    }
  })

  it('resolves start even when the first load fails', async () => {
    const fake = await listen({ mode: 'error' })
    servers.push(fake)
    const source = httpRules(fake.url, { intervalMs: 60_000 })
    sources.push(source)
    const onRules = vi.fn()
    const onError = vi.fn()
    await source.start(onRules, onError)
    expect(onRules).not.toHaveBeenCalled()
    expect(onError).toHaveBeenCalledTimes(1)
  })

  it('polls on an unref-ed timer and stop() clears it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const { fake, source } = await setup({ intervalMs: 1000, jitter: 0 })
    expect(fake.requests).toHaveLength(1)
    await vi.advanceTimersByTimeAsync(1000)
    await source.poll()
    expect(fake.requests.length).toBeGreaterThanOrEqual(2)
    const count = fake.requests.length
    source.stop()
    expect(vi.getTimerCount()).toBe(0)
    await vi.advanceTimersByTimeAsync(5000)
    expect(fake.requests).toHaveLength(count)
  })

  it('refuses bad options at construction', () => {
    expect(() => httpRules('not a url')).toThrow(OptionsError)
    expect(() => httpRules('ftp://x/rules')).toThrow(/expected an http\(s\) URL/)
    expect(() => httpRules('http://x/', { intervalMs: 0 })).toThrow(/intervalMs/)
    expect(() => httpRules('http://x/', { intervalMs: 2 ** 31 })).toThrow(/intervalMs/)
    expect(() => httpRules('http://x/', { jitter: 2 })).toThrow(/jitter/)
  })
})

describe('jitteredDelay', () => {
  it.each([
    [10_000, 0.1, 0, 9000],
    [10_000, 0.1, 0.5, 10_000],
    [10_000, 0.1, 0.999_999, 11_000],
    [10_000, 0, 0.3, 10_000],
    [1, 1, 0, 1],
  ])('interval %i, jitter %d, random %d → %i', (interval, jitter, random, expected) => {
    expect(jitteredDelay(interval, jitter, random)).toBe(expected)
  })

  // Past setTimeout's ceiling Node waits 1 ms instead: an interval near it stretched by jitter
  // (2^31 - 1 with 0.1 gave 2,362,232,012) polled the service about every millisecond.
  it('stays a delay setTimeout honours, for every interval and jitter the options accept', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (interval, jitter, random) => {
          const delay = jitteredDelay(interval, jitter, random)
          expect(delay).toBeGreaterThanOrEqual(1)
          expect(delay).toBeLessThanOrEqual(2 ** 31 - 1)
        },
      ),
    )
  })
})
