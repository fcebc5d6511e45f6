import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLimiter, httpRules, type Limiter, type RuleInput } from '@floodgate/core'
import {
  createRulesService,
  startRulesService,
  type RulesServiceApp,
  type RunningRulesService,
} from '@floodgate/rules-service'
import { TOKENS } from './helpers.js'

const auth = (token: string) => ({ authorization: `Bearer ${token}` })
const RULES: RuleInput[] = [
  { id: 'api', key: 'header:x-api-key', limit: 2, window: '1m' },
  { id: 'trial', key: 'header:x-api-key', limit: 1, window: '1m', shadow: true },
]
const report = {
  host: 'web-1',
  intervalMs: 10_000,
  rules: [
    { id: 'api', counts: { allowed: 5, rejected: 2 }, top: [{ client: 'sha256:aa', count: 2 }] },
  ],
}

describe('POST /v1/services/:service/report', () => {
  let app: RulesServiceApp
  beforeAll(async () => {
    app = await createRulesService({
      tokens: [
        { name: 'ops', token: TOKENS.admin, role: 'admin' },
        { name: 'hosts', token: TOKENS.reader, role: 'read', services: ['checkout'] },
      ],
      services: ['checkout', 'billing'],
    })
    const put = await app.inject({
      method: 'PUT',
      url: '/v1/services/checkout/rules',
      headers: auth(TOKENS.admin),
      payload: { rules: RULES },
    })
    expect(put.statusCode).toBe(200)
  })
  afterAll(() => app.close())

  const post = (
    payload: unknown,
    headers: Record<string, string> = auth(TOKENS.reader),
    service = 'checkout',
  ) =>
    app.inject({
      method: 'POST',
      url: `/v1/services/${service}/report`,
      headers,
      payload: payload as object,
    })

  it('needs the same token as the poll', async () => {
    const none = await post(report, {})
    expect(none.statusCode).toBe(401)
    expect(none.headers['content-type']).toMatch(/^application\/problem\+json/)
    expect((await post(report, auth('not-a-token-0123456789'))).statusCode).toBe(401)
    const other = await post(report, auth(TOKENS.reader), 'billing')
    expect(other.statusCode).toBe(403)
    expect(other.json()).toMatchObject({
      detail: expect.stringMatching(/may not read service "billing"/),
    })
  })

  it('answers like the poll: the rule set with its ETag, or 304 when current', async () => {
    const first = await post(report)
    expect(first.statusCode).toBe(200)
    expect(first.json()).toMatchObject({
      service: 'checkout',
      rules: [{ id: 'api' }, { id: 'trial' }],
    })
    const etag = first.headers.etag as string
    expect(etag).toMatch(/^"\d+-[0-9a-f]{32}"$/)
    const again = await post(report, { ...auth(TOKENS.reader), 'if-none-match': etag })
    expect(again.statusCode).toBe(304)
    expect(again.body).toBe('')
  })

  it('refuses junk with a problem+json 400 naming the field', async () => {
    const cases: [unknown, RegExp][] = [
      [{ ...report, host: '' }, /^host: /],
      [{ ...report, intervalMs: -1 }, /^intervalMs: /],
      [
        { ...report, rules: [{ id: 'api', counts: { allowed: 'many' } }] },
        /^rules\[0\]\.counts\.allowed: /,
      ],
      [
        { ...report, rules: Array.from({ length: 257 }, (_, i) => ({ id: `r${i}` })) },
        /^rules: expected an array of at most 256/,
      ],
      [
        {
          ...report,
          rules: [
            {
              id: 'api',
              top: [
                { client: 'sha256:aa', count: 3 },
                { client: 'sha256:aa', count: 3 },
              ],
            },
          ],
        },
        /^rules\[0\]\.top\[1\]\.client: duplicate client "sha256:aa"/,
      ],
      [{ ...report, admin: true }, /unknown field "admin"/],
      [[1, 2], /expected a JSON object/],
    ]
    for (const [body, detail] of cases) {
      const res = await post(body)
      expect(res.statusCode, JSON.stringify(body).slice(0, 80)).toBe(400)
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
      expect(res.json().detail).toMatch(detail)
    }
    const proto = await app.inject({
      method: 'POST',
      url: '/v1/services/checkout/report',
      headers: { ...auth(TOKENS.reader), 'content-type': 'application/json' },
      payload: '{"host":"h","intervalMs":1,"rules":[],"__proto__":{"x":1}}',
    })
    expect(proto.statusCode).toBe(400)
  })

  it('refuses a body over the service bodyLimit (413) and other media types (415)', async () => {
    const big = {
      ...report,
      rules: [{ id: 'api', top: [{ client: 'x'.repeat(70_000), count: 1 }] }],
    }
    const res = await post(big)
    expect(res.statusCode).toBe(413)
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
    const text = await app.inject({
      method: 'POST',
      url: '/v1/services/checkout/report',
      headers: { ...auth(TOKENS.reader), 'content-type': 'text/plain' },
      payload: 'allowed=5',
    })
    expect(text.statusCode).toBe(415)
  })

  it('answers 404 for an unknown service, and records nothing for it', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/services/nope/report',
      headers: auth(TOKENS.admin),
      payload: report,
    })
    expect(res.statusCode).toBe(404)
    expect(res.json().detail).toMatch(/no service named "nope"/)
  })

  it('shows what was reported in GET …/fleet, with the shadow flag of each rule', async () => {
    const res = await app.inject({
      url: '/v1/services/checkout/fleet',
      headers: auth(TOKENS.reader),
    })
    expect(res.statusCode).toBe(200)
    const view = res.json()
    expect(view).toMatchObject({
      service: 'checkout',
      bucketMs: 10_000,
      windowMs: 600_000,
      hostCount: 1,
    })
    expect(view.hosts[0].host).toBe('web-1')
    const api = view.rules.find((r: { id: string }) => r.id === 'api')
    // Two accepted reports (200 and 304) of 5 allowed and 2 rejected each; the refused ones
    // (401, 403, 400, 413, 404) count for nothing.
    expect(api).toMatchObject({ shadow: false, totals: { allowed: 10, rejected: 4 } })
    expect(api.top).toEqual([{ client: 'sha256:aa', count: 4 }])
    expect(view.silentRules).toEqual(['trial'])
    expect((await app.inject({ url: '/v1/services/checkout/fleet' })).statusCode).toBe(401)
  })
})

describe('the report in OpenAPI and the page assets', () => {
  let app: RulesServiceApp
  beforeAll(async () => {
    app = await createRulesService()
  })
  afterAll(() => app.close())

  it('describes POST …/report and GET …/fleet with the bounds the service enforces', async () => {
    const spec = (await app.inject({ url: '/openapi.json' })).json()
    expect(Object.keys(spec.paths)).toEqual(
      expect.arrayContaining(['/v1/services/{service}/report', '/v1/services/{service}/fleet']),
    )
    const report = spec.components.schemas.HostReport
    expect(report.properties.rules.maxItems).toBe(256)
    expect(report.properties.rules.items.properties.top.maxItems).toBe(20)
    expect(Object.keys(report.properties.rules.items.properties.counts.properties)).toEqual([
      'allowed',
      'queued',
      'rejected',
      'dropped',
      'shadowRejected',
      'failedOpen',
    ])
  })

  it('serves uPlot and the fleet view from its own origin under the page CSP', async () => {
    for (const [file, type] of [
      ['uPlot.iife.min.js', /^text\/javascript/],
      ['uPlot.min.css', /^text\/css/],
      ['fleet.js', /^text\/javascript/],
      ['fleet.css', /^text\/css/],
    ] as const) {
      const res = await app.inject({ url: `/admin/${file}` })
      expect(res.statusCode, file).toBe(200)
      expect(res.headers['content-type']).toMatch(type)
      expect(res.headers['content-security-policy']).toContain("default-src 'none'")
    }
    expect((await app.inject({ url: '/admin/uPlot.iife.min.js' })).body).toContain('uPlot')
  })
})

describe('hosts reporting to a running service', () => {
  let service: RunningRulesService
  const limiters: Limiter[] = []
  beforeAll(async () => {
    service = await startRulesService({
      port: 0,
      tokens: [{ name: 'ops', token: TOKENS.admin, role: 'admin' }],
      services: ['shop'],
    })
    const res = await fetch(`${service.url}/v1/services/shop/rules`, {
      method: 'PUT',
      headers: { ...auth(TOKENS.admin), 'content-type': 'application/json' },
      body: JSON.stringify({ rules: RULES }),
    })
    expect(res.status).toBe(200)
  })
  afterAll(async () => {
    for (const l of limiters) await l.close()
    await service.stop()
  })

  function host(name: string) {
    // A long interval: the test polls by hand, so the counts it checks are exact.
    const rules = httpRules(`${service.url}/v1/services/shop/ruleset`, {
      intervalMs: 3_600_000,
      report: { host: name },
    })
    const limiter = createLimiter({ rules, topClients: { clearKeys: true } })
    limiters.push(limiter)
    return { limiter, rules }
  }
  const hit = (limiter: Limiter, key: string) =>
    limiter.check({ method: 'GET', path: '/x', ip: '127.0.0.1', headers: { 'x-api-key': key } })

  it('adds up the counters and refused clients of every host, the shadow rule included', async () => {
    const a = host('web-a')
    const b = host('web-b')
    await Promise.all([a.limiter.ready, b.limiter.ready])
    for (let i = 0; i < 5; i++) await hit(a.limiter, 'alice') // 2 allowed, 3 refused; trial would refuse 4
    for (let i = 0; i < 3; i++) await hit(b.limiter, 'alice') // 2 allowed, 1 refused; trial would refuse 2
    for (let i = 0; i < 2; i++) await hit(b.limiter, 'bob') // 2 allowed; trial would refuse 1
    await Promise.all([a.rules.poll(), b.rules.poll()])

    const view = (await (await fetch(`${service.url}/v1/services/shop/fleet`)).json()) as {
      hostCount: number
      rules: {
        id: string
        shadow: boolean
        totals: Record<string, number>
        top: { client: string; count: number }[]
      }[]
    }
    expect(view.hostCount).toBe(2)
    const api = view.rules.find((r) => r.id === 'api')
    expect(api?.totals).toMatchObject({ allowed: 6, rejected: 4 })
    expect(api?.top).toEqual([{ client: 'alice', count: 4 }])
    const trial = view.rules.find((r) => r.id === 'trial')
    expect(trial?.shadow).toBe(true)
    expect(trial?.totals.shadowRejected).toBe(7)
    expect(trial?.top).toEqual([
      { client: 'alice', count: 6 },
      { client: 'bob', count: 1 },
    ])

    // A second round carries only what happened since the first.
    await hit(a.limiter, 'carol')
    await a.rules.poll()
    const after = (await (
      await fetch(`${service.url}/v1/services/shop/fleet`)
    ).json()) as typeof view
    expect(after.rules.find((r) => r.id === 'api')?.totals).toMatchObject({
      allowed: 7,
      rejected: 4,
    })
  })

  it('a host showing clear keys reports clients keyed by fallback, by several parts or with control characters', async () => {
    // Stored keys hold control characters: the IP fallback of a client without the header
    // ("\u0000ip:…"), the separator of a composite key, a tab a client put in its header. Sent
    // as they are, the service refused the whole report, and every later one (the client stays
    // in the summary): the host's counts never reached the fleet view.
    const own = await startRulesService({
      port: 0,
      tokens: [{ name: 'ops', token: TOKENS.admin, role: 'admin' }],
      services: ['shop'],
    })
    try {
      await fetch(`${own.url}/v1/services/shop/rules`, {
        method: 'PUT',
        headers: { ...auth(TOKENS.admin), 'content-type': 'application/json' },
        body: JSON.stringify({
          rules: [
            { id: 'api', key: 'header:x-api-key', limit: 1, window: '1m' },
            { id: 'pair', key: ['header:x-api-key', 'ip'], limit: 1, window: '1m' },
          ],
        }),
      })
      const warnings: unknown[] = []
      const logger = {
        warn: (obj: unknown) => void warnings.push(obj),
        info: () => {},
        error: () => {},
        debug: () => {},
      }
      const rules = httpRules(`${own.url}/v1/services/shop/ruleset`, {
        intervalMs: 3_600_000,
        report: { host: 'web-c' },
        logger,
      })
      const limiter = createLimiter({ rules, topClients: { clearKeys: true } })
      limiters.push(limiter)
      await limiter.ready
      const send = (headers: Record<string, string>) =>
        limiter.check({ method: 'GET', path: '/x', ip: '127.0.0.1', headers })
      for (let i = 0; i < 3; i++) await send({}) // no key: the IP fallback, 2 refusals per rule
      for (let i = 0; i < 2; i++) await send({ 'x-api-key': 'a\tb' }) // 1 refusal per rule
      await rules.poll()
      await rules.poll()
      expect(warnings).toEqual([])
      const view = (await (await fetch(`${own.url}/v1/services/shop/fleet`)).json()) as {
        hostCount: number
        rules: { id: string; totals: Record<string, number>; top: { client: string }[] }[]
      }
      expect(view.hostCount).toBe(1)
      const api = view.rules.find((r) => r.id === 'api')
      expect(api?.totals).toMatchObject({ allowed: 2, rejected: 3 })
      expect(api?.top.map((c) => c.client)).toEqual(['\\u0000ip:127.0.0.1', 'a\\u0009b'])
      const pair = view.rules.find((r) => r.id === 'pair')
      expect(pair?.top.map((c) => c.client)).toEqual([
        '\\u0000ip:127.0.0.1',
        'a\\u0009b\\u001f127.0.0.1',
      ])
    } finally {
      await own.stop()
    }
  })

  it('a host whose service takes no reports keeps its rules current and warns once', async () => {
    const old = await startRulesService({
      port: 0,
      fleet: false,
      tokens: [{ name: 'ops', token: TOKENS.admin, role: 'admin' }],
      services: ['shop'],
    })
    try {
      const warnings: string[] = []
      const logger = {
        warn: (obj: { code?: string }) => void warnings.push(String(obj.code)),
        info: () => {},
        error: () => {},
        debug: () => {},
      }
      const rules = httpRules(`${old.url}/v1/services/shop/ruleset`, {
        intervalMs: 3_600_000,
        report: true,
        logger,
      })
      const limiter = createLimiter({ rules })
      limiters.push(limiter)
      await limiter.ready
      await fetch(`${old.url}/v1/services/shop/rules`, {
        method: 'PUT',
        headers: { ...auth(TOKENS.admin), 'content-type': 'application/json' },
        body: JSON.stringify({ rules: RULES }),
      })
      await rules.poll()
      await rules.poll()
      expect(limiter.rules.map((r) => r.id)).toEqual(['api', 'trial'])
      expect(warnings).toEqual(['FG_WRN_REPORT_REFUSED'])
    } finally {
      await old.stop()
    }
  })
})
