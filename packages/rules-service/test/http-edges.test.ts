import { Writable } from 'node:stream'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createRulesService,
  openPgliteDb,
  startRulesService,
  type Db,
  type RunningRulesService,
} from '@floodgate/rules-service'
import { TOKENS } from './helpers.js'
import { rawRequest, type RawResponse } from './raw-http.js'

// Over a listening server and raw sockets, so the requests Fastify and Node's HTTP parser answer
// themselves are covered: every error response is problem+json, and no credential sent in a
// header or a URL appears in any log line.
describe('HTTP edges of the rules service', () => {
  let service: RunningRulesService
  let db: Db
  let port: number
  const logs: string[] = []

  beforeAll(async () => {
    db = await openPgliteDb()
    service = await startRulesService({
      port: 0,
      db,
      services: ['checkout'],
      bodyLimit: 4096,
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
      logger: { level: 'trace' },
      logStream: new Writable({
        write(chunk: Buffer, _enc, done) {
          logs.push(chunk.toString())
          done()
        },
      }),
    })
    port = Number(new URL(service.url).port)
  })
  afterAll(async () => {
    await service?.stop()
    await db?.close()
  })

  const request = (
    line: string,
    headers: Record<string, string> = {},
    body?: string,
  ): Promise<RawResponse> => {
    const all: Record<string, string> = { host: '127.0.0.1', connection: 'close', ...headers }
    if (body !== undefined) all['content-length'] = String(Buffer.byteLength(body))
    const head = Object.entries(all)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')
    return rawRequest(port, `${line}\r\n${head}\r\n${body ?? ''}`)
  }

  const expectProblem = (res: RawResponse, status: number, title?: string) => {
    expect(res.status).toBe(status)
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
    const problem = JSON.parse(res.body) as { type: string; status: number; title: string }
    expect(problem.status).toBe(status)
    expect(problem.type).toMatch(/#problem-[a-z-]+$/)
    if (title !== undefined) expect(problem.title).toBe(title)
    return problem
  }
  const json = { 'content-type': 'application/json', authorization: `Bearer ${TOKENS.admin}` }
  const rules = '/v1/services/checkout/rules'

  it('answers every error Fastify or Node produces itself as problem+json', async () => {
    expectProblem(
      await request(`GET /v1/services/${'a'.repeat(300)}/rules HTTP/1.1`),
      414,
      'URI too long',
    )
    expectProblem(
      await request(`GET /v1/services/checkout/rules?x=${'a'.repeat(20_000)} HTTP/1.1`),
      414,
      'URI too long',
    )
    expectProblem(
      await request('GET /v1/services HTTP/1.1', { 'x-big': 'b'.repeat(20_000) }),
      431,
      'Request headers too large',
    )
    expectProblem(await request('GET /v1/services/%zz/rules HTTP/1.1'), 400, 'Bad request')
    expectProblem(await request('GET /v1/services/%E0%A4%A/rules HTTP/1.1'), 400)
    expectProblem(await request('GET /nope HTTP/1.1'), 404, 'Not found')
    expectProblem(await request('PROPFIND /v1 HTTP/1.1'), 404)
    expectProblem(
      await request(`POST ${rules} HTTP/1.1`, { ...json, 'content-type': 'text/plain' }, 'id=a'),
      415,
    )
    expectProblem(await request(`POST ${rules} HTTP/1.1`, json, `{"d":"${'x'.repeat(5000)}"}`), 413)
    expectProblem(await request(`POST ${rules} HTTP/1.1`, json, '{"id":'), 400, 'Malformed JSON')
    expectProblem(await request(`POST ${rules} HTTP/1.1`, json, ''), 400, 'Malformed JSON')
    expectProblem(
      await request(`POST ${rules} HTTP/1.1`, { ...json, 'content-length': '5' }, 'toolong'),
      400,
    )
    expectProblem(await rawRequest(port, 'HELLO\r\n\r\n'), 400)
    expectProblem(await rawRequest(port, 'GET / HTTP/1.1\r\nbad header\r\n\r\n'), 400)
  })

  it('refuses a repeated query parameter with a 400 naming it', async () => {
    const res = await request('GET /v1/services/checkout/audit?rule=a&limit=5&rule=b HTTP/1.1')
    const problem = expectProblem(res, 400) as unknown as { detail: string }
    expect(problem.detail).toBe('query.rule: given 2 times; give each query parameter once')
    expectProblem(await request('GET /v1/services/checkout/ruleset?x=1&x=2 HTTP/1.1'), 400)
  })

  it('answers any request line with a problem whenever it answers an error', async () => {
    const pathChar = fc.constantFrom(
      'a',
      '/',
      '%',
      '%2',
      '%zz',
      '%00',
      '%ED%A0%80',
      '?',
      '&',
      '=',
      '..',
      'é',
      '#',
    )
    const path = fc.array(pathChar, { maxLength: 20 }).map((parts) => parts.join(''))
    const method = fc.constantFrom(
      'GET',
      'PUT',
      'POST',
      'PATCH',
      'DELETE',
      'HEAD',
      'OPTIONS',
      'TRACE',
      'BREW',
    )
    const prefix = fc.constantFrom(
      '/v1/services/',
      '/v1/services/checkout/rules/',
      '/v1/services/checkout/audit?',
      '/admin/',
      '/',
    )
    await fc.assert(
      fc.asyncProperty(method, prefix, path, async (m, p, rest) => {
        const line = `${m} ${p}${encodeURI(rest).replace(/%25/g, '%')} HTTP/1.1`
        const res = await request(line, { authorization: `Bearer ${TOKENS.admin}` })
        if (res.status >= 400 && m !== 'HEAD') {
          expect(res.headers['content-type'], line).toMatch(/^application\/problem\+json/)
          expect((JSON.parse(res.body) as { status: number }).status).toBe(res.status)
        }
        expect(res.status, line).toBeLessThan(500)
      }),
      { numRuns: 150 },
    )
  }, 120_000)

  it('never writes a credential to the log, whatever the URL or header carries it', async () => {
    // Credentials are long random strings, so finding one in the log can only be a leak.
    const secret = fc.stringMatching(/^[A-Za-z0-9_-]{20,40}$/)
    const name = fc.constantFrom(
      'token',
      'access_token',
      'api_key',
      'apiKey',
      'API-KEY',
      'x-api-key',
      'secret',
      'password',
      'client_secret',
      'sig',
      '%74oken',
      'Token',
    )
    const shape = fc.constantFrom(
      'ok',
      'bad-pct',
      'long-param',
      'long-url',
      'not-found',
      'repeat',
      'write',
    )
    await fc.assert(
      fc.asyncProperty(shape, name, secret, secret, async (s, param, querySecret, headerSecret) => {
        const before = logs.length
        const q = `?limit=5&${param}=${querySecret}&rule=r`
        const path =
          s === 'bad-pct'
            ? `/v1/services/%zz/audit${q}`
            : s === 'long-param'
              ? `/v1/services/${'a'.repeat(200)}/audit${q}`
              : s === 'long-url'
                ? `/v1/services/checkout/audit${q}&pad=${'p'.repeat(20_000)}`
                : s === 'not-found'
                  ? `/nowhere${q}`
                  : s === 'repeat'
                    ? `/v1/services/checkout/audit${q}&${param}=${querySecret}`
                    : `${rules}${q}`
        await request(
          `${s === 'write' ? 'POST' : 'GET'} ${path} HTTP/1.1`,
          {
            'content-type': 'application/json',
            authorization: `Bearer ${headerSecret}`,
            'x-api-key': headerSecret,
            cookie: `session=${headerSecret}`,
          },
          s === 'write' ? '{"id":"r","limit":1,"window":"1m"}' : undefined,
        )
        const text = logs.slice(before).join('')
        expect(text.length).toBeGreaterThan(0)
        expect(text, `${s} ${param}`).not.toContain(querySecret)
        expect(text).not.toContain(headerSecret)
      }),
      { numRuns: 80 },
    )
    // The URL is still logged with the credential's value replaced, so the line stays useful.
    expect(logs.join('')).toMatch(
      /"url":"\/v1\/services\/[^"]*\?limit=5&[^"=&]+=\[redacted\]&rule=r/,
    )
  }, 120_000)
})

describe('a rules service that is stopping', () => {
  it('answers requests that still arrive with a 503 problem and Connection: close', async () => {
    const db = await openPgliteDb()
    const app = await createRulesService({ db })
    const closing = app.close()
    const res = await app.inject({ url: '/v1/services' })
    await closing
    await db.close()
    expect(res.statusCode).toBe(503)
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
    expect(res.headers.connection).toBe('close')
    expect(res.json()).toMatchObject({ title: 'Service unavailable', status: 503 })
  })
})
