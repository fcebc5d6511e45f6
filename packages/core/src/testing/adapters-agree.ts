import { connect } from 'node:net'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createLimiter } from '../limiter.js'
import type { Limiter } from '../limiter-types.js'
import type { RuleInput } from '../rules/schema.js'
import type { HeaderFormat } from '../http/headers.js'
import { spellingOf } from './request-targets.js'

/**
 * Which proxies an app trusts, in each framework's spelling: `none` (the default), `all`
 * (every proxy: the leftmost `X-Forwarded-For` entry is the client), `one` (one proxy in front:
 * Express `'loopback'`, Fastify `'loopback'`, Koa `proxy` with `maxIpsCount: 1`).
 */
export type AgreeTrust = 'none' | 'all' | 'one'

/**
 * Starts an adapter's app on a loopback port: `limiter` mounted app-wide (Fastify: registered,
 * no routes, its not-found handler answering), every request that passes answered
 * `200 {"ok":true}` as JSON whatever its method and path, with the proxy trust given.
 */
export type AgreeServe = (
  limiter: Limiter<never>,
  trust: AgreeTrust,
  callbacks?: AgreeOptions,
) => Promise<{ readonly port: number; close(): Promise<void> }>

/**
 * The app's own callbacks on the request path, framework-neutral: the starter passes each as
 * the adapter's option of that name (`skip`, `cost`, `requestWasSuccessful`, `onRejected`),
 * returning what the callback here returns.
 */
export interface AgreeCallbacks {
  readonly skip?: (() => unknown) | undefined
  readonly cost?: (() => unknown) | undefined
  readonly requestWasSuccessful?: (() => unknown) | undefined
  /** `respond()` answers the refused request 418 the framework's way. */
  readonly onRejected?: ((respond: () => void) => unknown) | undefined
}

/** {@link AgreeCallbacks} and the header options, passed to the adapter under their names. */
export interface AgreeOptions extends AgreeCallbacks {
  readonly headers?: boolean | HeaderFormat | undefined
  readonly shadowHeader?: boolean | undefined
}

/**
 * The options every adapter takes alike, from an {@link AgreeOptions}: warnings off, the header
 * options, and the synchronous callbacks typed as each adapter's own (they read no argument).
 * `onRejected` differs per framework (how it answers 418) and is left to the harness.
 *
 * @param options - what a run of {@link describeAdaptersAgree} or
 *   {@link describeAppCallbackAnswers} passes to the app
 * @returns the options to spread into the adapter's
 */
export function agreeMountOptions(options: AgreeOptions): {
  warnings: false
  headers: boolean | HeaderFormat | undefined
  shadowHeader: boolean | undefined
  skip: (() => boolean) | undefined
  cost: (() => number) | undefined
  requestWasSuccessful: (() => boolean) | undefined
} {
  const { skip, cost, requestWasSuccessful, headers, shadowHeader } = options
  return {
    warnings: false,
    headers,
    shadowHeader,
    // Any answer on purpose: the property checks what the adapter makes of values of any type.
    skip: skip as (() => boolean) | undefined,
    cost: cost as (() => number) | undefined,
    requestWasSuccessful: requestWasSuccessful as (() => boolean) | undefined,
  }
}

const NOW = 1_700_000_000_000

/**
 * Small limits, so refusals come within a few requests; a cost, a 503 refusal, a key from a
 * header, a dropped connection and a deny list, so every part of a decision shows.
 */
const AGREE_RULES: readonly RuleInput[] = [
  { id: 'login', match: 'POST /login', limit: 2, window: '1m' },
  { id: 'user', match: '/users/:id', limit: 3, window: '1m' },
  {
    id: 'files',
    match: '/files/**',
    limit: 3,
    window: '1m',
    onLimit: { action: 'reject', status: 503 },
  },
  { id: 'drop', match: '/drop/**', limit: 1, window: '1m', onLimit: { action: 'drop' } },
  {
    id: 'api-key',
    match: { headers: { 'x-api-key': true } },
    key: 'header:x-api-key',
    limit: 4,
    window: '1m',
  },
  {
    id: 'writes',
    match: { methods: ['POST', 'PUT', 'DELETE', 'PATCH'] },
    cost: 2,
    limit: 9,
    window: '1m',
  },
  { id: 'reads', match: 'GET /**', limit: 7, window: '10s' },
  // Refuses nothing, but says so in Floodgate-Shadow once over its limit.
  { id: 'trial', match: '/users/**', limit: 1, window: '1m', shadow: true },
  { id: 'per-ip', limit: 12, window: '1m' },
]

/** One request of a run, sent byte for byte to every adapter. */
interface AgreeRequest {
  readonly method: string
  readonly target: string
  /** Header lines (without CRLF), in order; values may repeat a name. */
  readonly headers: readonly string[]
}

const method = fc.constantFrom(
  'GET',
  'GET',
  'HEAD',
  'POST',
  'POST',
  'PUT',
  'DELETE',
  'PATCH',
  'OPTIONS',
  // Not methods Node's parser takes: every adapter must agree that nothing was decided.
  'get',
  'FOO',
)

const target: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .constantFrom('/login', '/users/me', '/files/a.txt', '/x', '/drop/x', '/')
      .chain(spellingOf)
      // Fastify answers an absolute-form target with a fragment 400 before any hook runs (as it
      // does a bad escape): nothing to compare, and the others' counters would move alone.
      .filter((t) => !(t.includes('://') && t.includes('#'))),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('/files/', '/users/', '/x/'), fc.integer({ min: 200, max: 6000 }))
      .map(([p, n]) => p + 'a'.repeat(n)),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'http://x',
      'http://x?a=/login',
      '/%2e%2e/login',
      '/login%2F',
      '/login%00',
    ),
  },
  {
    // Spellings the frameworks read each their own way: `*` (OPTIONS *), a fragment, raw latin1 bytes on the wire,
    // a decomposed (NFD) letter, backslashes, encoded slashes in lower case, dot segments
    // spelled out, absolute form with an odd scheme or authority, and a path of a lone slash run.
    weight: 2,
    arbitrary: fc.constantFrom(
      '*',
      '/login#x',
      '/users/me#/login',
      '/users/caf\u00e9',
      '/users/cafe%CC%81',
      '/users/caf%C3%A9',
      '\\login',
      '/files\\a.txt',
      '/files%5Ca.txt',
      '/files%2fa.txt',
      '/x/..%2Flogin',
      '/x/%2E%2E/login',
      '/users/%2E',
      '/users/..',
      '//login',
      '///',
      'HTTPS://X/login',
      'http://u@x/users/me',
      'ftp://x/login',
      'http:/login',
      '/login?',
      '/users/me;',
      '/users/ME',
    ),
  },
)

// Values for the header a rule keys on: absent, given twice, empty, with a comma, not ASCII
// (a latin1 byte on the wire), differing in case, on the deny list.
const apiKey = fc.constantFrom(
  [],
  [],
  ['k1'],
  ['K1'],
  ['k1', 'k2'],
  ['k1, k2'],
  [''],
  [' k1 '],
  ['caf\u00e9'],
  ['banned'],
  ['k1', 'banned'],
)
const forwardedFor = fc.constantFrom(
  [],
  [],
  ['203.0.113.7'],
  ['203.0.113.7, 198.51.100.2'],
  ['203.0.113.7', '198.51.100.2'],
  ['203.0.113.7 ,198.51.100.2 '],
  ['2001:DB8::1'],
  ['[2001:db8::1]:80'],
  ['203.0.113.7:8080'],
  ['::ffff:203.0.113.7'],
  ['not-an-ip'],
  [''],
)
const host = fc.constantFrom(['x'], ['EX.com:80'], [], ['a', 'b'])

const request: fc.Arbitrary<AgreeRequest> = fc
  .record({ method, target, apiKey, forwardedFor, host })
  .map(({ method: m, target: t, apiKey: k, forwardedFor: f, host: h }) => ({
    method: m,
    target: t,
    headers: [
      ...h.map((v) => `Host: ${v}`),
      ...k.map((v) => `X-Api-Key: ${v}`),
      ...f.map((v) => `X-Forwarded-For: ${v}`),
    ],
  }))

/** What a client saw of one answer, and what the limiter decided. */
interface Seen {
  readonly status: number | 'dropped'
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** Per decision: each rule's id, key, whether it allowed, and what remains. */
  readonly decisions: readonly string[]
}

// The headers that tell a decision (names lower-cased: Fastify sends them so).
const COMPARED = new Set([
  'ratelimit',
  'ratelimit-policy',
  'retry-after',
  'content-type',
  'content-length',
  'floodgate-shadow',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
])

function send(port: number, r: AgreeRequest): Promise<Omit<Seen, 'decisions'>> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      const head = [
        `${r.method} ${r.target} HTTP/1.1`,
        ...r.headers,
        'Content-Length: 0',
        'Connection: close',
      ]
      socket.write(head.join('\r\n') + '\r\n\r\n', 'latin1')
    })
    let data = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => (data += chunk))
    socket.on('error', () => {})
    socket.on('close', () => {
      const end = data.indexOf('\r\n\r\n')
      const status = /^HTTP\/1\.1 (\d{3})/.exec(data)?.[1]
      if (status === undefined || end < 0) {
        resolve({ status: 'dropped', headers: {}, body: '' })
        return
      }
      const headers: Record<string, string> = {}
      for (const line of data.slice(0, end).split('\r\n').slice(1)) {
        const colon = line.indexOf(':')
        const name = line.slice(0, colon).toLowerCase()
        if (COMPARED.has(name)) headers[name] = line.slice(colon + 1).trim()
      }
      resolve({ status: Number(status), headers, body: data.slice(end + 4) })
    })
  })
}

/**
 * The adapters agree: a fast-check property that sends the same generated requests, byte for
 * byte over real HTTP, to every adapter's app (each with its own limiter built from the same
 * rules, on one frozen clock) and requires the same answer from each: status, RateLimit,
 * RateLimit-Policy and Retry-After headers, content type and length, body, and the same
 * decisions (the rules matched, the key each counted under, what remains after the cost).
 * Requests vary the method (lower-case and unknown ones included), the target (percent-encoding,
 * encoded slashes and dots, dot segments, double and trailing slashes, `;` parameters, query
 * strings, absolute form, `*`, long paths), a keyed header (twice, empty, with a comma, not
 * ASCII), `X-Forwarded-For` spellings, and each app's proxy trust.
 *
 * @param adapters - each adapter's app, by name
 * @param numRuns - fast-check runs
 */
export function describeAdaptersAgree(
  adapters: Readonly<Record<string, AgreeServe>>,
  numRuns: number = 25,
): void {
  describe('the adapters agree on every request', () => {
    it('answers and decides the same request the same way on every adapter', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom<AgreeTrust>('none', 'all', 'one'),
          fc.record({
            headers: fc.constantFrom<boolean | HeaderFormat>(
              true,
              'draft-7',
              'legacy',
              'both',
              false,
            ),
            shadowHeader: fc.boolean(),
          }),
          fc.array(request, { minLength: 1, maxLength: 14 }),
          async (trust, options, requests) => {
            const runs = await Promise.all(
              Object.entries(adapters).map(async ([name, serve]) => {
                const decisions: string[] = []
                const limiter = createLimiter<never>({
                  rules: AGREE_RULES,
                  clock: () => NOW,
                  deny: { keys: { 'header:x-api-key': ['banned'] } },
                  onDecision: (d) => {
                    decisions.push(
                      JSON.stringify([
                        d.action,
                        d.outcomes.map((o) => [o.rule.id, o.key, o.allowed, o.remaining]),
                      ]),
                    )
                  },
                })
                const app = await serve(limiter, trust, options)
                return { name, limiter, app, decisions }
              }),
            )
            try {
              for (const r of requests) {
                const seen: Array<[string, Seen]> = []
                for (const run of runs) {
                  run.decisions.length = 0
                  const answer = await send(run.app.port, r)
                  const decisions = [...run.decisions]
                  // Refused by Node's parser before any framework code: each framework words its
                  // own 400, and only the status is compared.
                  const shown =
                    decisions.length === 0
                      ? { status: answer.status, headers: {}, body: '' }
                      : answer
                  seen.push([run.name, { ...shown, decisions }])
                }
                const [first, ...rest] = seen
                for (const [name, s] of rest) {
                  expect(
                    s,
                    `${r.method} ${r.target} ${JSON.stringify(r.headers)}: ${name} vs ${first![0]}`,
                  ).toEqual(first![1])
                }
              }
            } finally {
              for (const run of runs) {
                await run.app.close()
                await run.limiter.close()
              }
            }
          },
        ),
        { numRuns },
      )
    })
  })
}

/** How a callback answers: a value, a throw, or a promise (or bare thenable) of either. */
type Answering =
  | { readonly kind: 'value'; readonly value: unknown }
  | { readonly kind: 'throw' }
  | { readonly kind: 'resolve'; readonly value: unknown }
  | { readonly kind: 'reject' }
  | { readonly kind: 'thenable-reject' }

const answering: fc.Arbitrary<Answering> = fc.oneof(
  fc.record({
    kind: fc.constant('value' as const),
    value: fc.constantFrom<unknown>(true, false, undefined, null, 2, 0, -1, Number.NaN, 'x', {}),
  }),
  fc.constant({ kind: 'throw' as const }),
  fc.record({ kind: fc.constant('resolve' as const), value: fc.constantFrom<unknown>(true, 2) }),
  fc.constant({ kind: 'reject' as const }),
  fc.constant({ kind: 'thenable-reject' as const }),
)

function answer(a: Answering, before?: () => void): unknown {
  before?.()
  switch (a.kind) {
    case 'value':
      return a.value
    case 'throw':
      throw new Error('the app callback threw')
    case 'resolve':
      return Promise.resolve(a.value)
    case 'reject':
      return Promise.reject(new Error('the app callback rejected'))
    case 'thenable-reject':
      return {
        then(_ok: unknown, fail: (e: unknown) => void) {
          fail(new Error('the app thenable rejected'))
        },
      }
  }
}

/** The status a request gets, by the model: only `true` skips; a refusal handler's failure is a 500. */
function expectedStatus(skip: Answering, refused: boolean, onRejected: Answering): number {
  if (skip.kind === 'value' && skip.value === true) return 200
  if (!refused) return 200
  if (
    onRejected.kind === 'throw' ||
    onRejected.kind === 'reject' ||
    onRejected.kind === 'thenable-reject'
  )
    return 500
  return 418
}

function get(port: number): Promise<number | 'no answer'> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write('GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    })
    let data = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => (data += chunk))
    socket.on('error', () => {})
    const timer = setTimeout(() => socket.destroy(), 3_000)
    socket.on('close', () => {
      clearTimeout(timer)
      const status = /^HTTP\/1\.1 (\d{3})/.exec(data)?.[1]
      resolve(status === undefined ? 'no answer' : Number(status))
    })
  })
}

/**
 * The app's callbacks on the request path (`skip`, `cost`, `requestWasSuccessful`, `onRejected`)
 * may answer anything: a value of any type, a throw, a promise that resolves or rejects, a bare
 * thenable. A fast-check property over real HTTP to every adapter: no rejection goes unhandled
 * (one would end the process), every request is answered, and with the status the model says
 * (only `true` skips; a cost that is not a positive number costs 1; a refusal handler that
 * throws or rejects is a 500, one that answers is its answer) on every adapter alike.
 *
 * @param adapters - each adapter's app, by name
 * @param numRuns - fast-check runs
 */
export function describeAppCallbackAnswers(
  adapters: Readonly<Record<string, AgreeServe>>,
  numRuns: number = 20,
): void {
  describe('the app callbacks on the request path may answer anything', () => {
    it('never leaves a rejection unhandled nor a request unanswered, on every adapter alike', async () => {
      const unhandled: unknown[] = []
      const onUnhandled = (reason: unknown): void => void unhandled.push(reason)
      process.on('unhandledRejection', onUnhandled)
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.record({
              skip: answering,
              cost: answering,
              outcome: answering,
              onRejected: answering,
            }),
            fc.integer({ min: 1, max: 4 }),
            async (callbacks, requests) => {
              for (const [name, serve] of Object.entries(adapters)) {
                let charged = 0
                const limiter = createLimiter<never>({
                  // Two units a minute: a request of cost 2 or two of cost 1 use them up.
                  rules: [
                    { id: 'two', limit: 2, window: '1m' },
                    { id: 'failures', limit: 1000, window: '1m', count: 'failed' },
                  ],
                  clock: () => NOW,
                  onDecision: (d) => {
                    const o = d.outcomes.find((x) => x.rule.id === 'two')
                    if (o?.allowed === true) charged = 2 - o.remaining
                  },
                })
                const app = await serve(limiter, 'none', {
                  skip: () => answer(callbacks.skip),
                  cost: () => answer(callbacks.cost),
                  requestWasSuccessful: () => answer(callbacks.outcome),
                  onRejected: (respond) => {
                    const a = callbacks.onRejected
                    // A handler that answers does so before it settles (or as it returns).
                    return answer(
                      a,
                      a.kind === 'value' || a.kind === 'resolve' ? respond : undefined,
                    )
                  },
                })
                try {
                  const cost =
                    callbacks.cost.kind === 'value' &&
                    typeof callbacks.cost.value === 'number' &&
                    callbacks.cost.value > 0
                      ? callbacks.cost.value
                      : 1
                  for (let i = 0; i < requests; i++) {
                    const status = await get(app.port)
                    const refused = (i + 1) * cost > 2
                    expect(status, `${name}, request ${i + 1}: ${JSON.stringify(callbacks)}`).toBe(
                      expectedStatus(callbacks.skip, refused, callbacks.onRejected),
                    )
                  }
                  if (!(callbacks.skip.kind === 'value' && callbacks.skip.value === true)) {
                    expect(charged, `${name}: charged`).toBe(
                      Math.min(2, Math.floor(2 / cost) * cost, requests * cost),
                    )
                  }
                } finally {
                  await app.close()
                  await limiter.close()
                }
                // Let a rejection nobody handled be reported before the next adapter runs.
                await new Promise((resolve) => setImmediate(resolve))
                await new Promise((resolve) => setImmediate(resolve))
                expect(unhandled, `${name}: unhandled rejections`).toEqual([])
              }
            },
          ),
          { numRuns },
        )
      } finally {
        process.off('unhandledRejection', onUnhandled)
      }
    })
  })
}
