import { expect } from 'vitest'
import type { AdapterScenario, ScenarioRequest, ScenarioRoute } from './scenario-types.js'

// The table every adapter runs (through describeAdapterScenarios): the same requests and the
// same literal expectations for Express, Fastify and Koa.

const GET = (path: string, headers?: Record<string, string>): ScenarioRequest => ({
  method: 'GET',
  path,
  ...(headers ? { headers } : {}),
})
const OK = { ok: true }
const JSON_TYPE = 'application/json; charset=utf-8'
const PROBLEM_TYPE = 'application/problem+json; charset=utf-8'
/** The routes of a scenario that lists none. */
export const DEFAULT_ROUTES: readonly ScenarioRoute[] = [
  { method: 'GET', path: '/' },
  { method: 'GET', path: '/users/:id' },
]

/** No RateLimit headers at all (fail-open, exempt, skipped). */
const NO_LIMIT_HEADERS = {
  'ratelimit-policy': undefined,
  ratelimit: undefined,
  'retry-after': undefined,
}

const FORWARDED = (ip: string, headers: Record<string, string> = {}): ScenarioRequest =>
  GET('/', { 'x-forwarded-for': ip, ...headers })

function refused(status: 403 | 404 | 503, reason: 'deny-list' | 'unmatched'): object {
  return {
    type: 'about:blank',
    title: { 403: 'Forbidden', 404: 'Not Found', 503: 'Service Unavailable' }[status],
    status,
    detail:
      reason === 'deny-list'
        ? 'This client is not allowed to use this service.'
        : 'This client is not known to the rules.',
    'violated-policies': [],
  }
}

const DENIED = {
  status: 403,
  headers: { ...NO_LIMIT_HEADERS, 'content-type': PROBLEM_TYPE },
  body: refused(403, 'deny-list'),
}

function problem(status: 429 | 503, ids: string[], retryAfter: number): object {
  return {
    type: 'about:blank',
    title: status === 503 ? 'Service Unavailable' : 'Too Many Requests',
    status,
    detail: `Rate limit exceeded (${ids.join(', ')}); retry in ${retryAfter} s.`,
    'violated-policies': ids,
    retryAfter,
  }
}

/**
 * The scenario table every adapter runs. Expected statuses, headers and bodies are literal, so
 * passing it means Express, Fastify and Koa answer byte-for-byte alike.
 */
export const adapterScenarios: readonly AdapterScenario[] = [
  {
    name: 'allow: RateLimit headers, handler runs',
    rules: [{ id: 'per-ip', limit: 3, window: '1m', algorithm: 'fixed-window' }],
    steps: [
      {
        send: GET('/'),
        expect: {
          status: 200,
          headers: {
            'ratelimit-policy': '"per-ip";q=3;w=60',
            ratelimit: '"per-ip";r=2;t=60',
            'retry-after': undefined,
            'content-type': JSON_TYPE,
          },
          body: OK,
        },
      },
      { handlerCalls: 1 },
    ],
  },
  {
    name: 'reject 429: Retry-After, problem+json, handler not run',
    rules: [{ id: 'per-ip', limit: 1, window: '10s', algorithm: 'fixed-window' }],
    steps: [
      { send: GET('/users/1'), expect: { status: 200, body: OK } },
      { advanceMs: 2500 },
      {
        send: GET('/users/2'),
        expect: {
          status: 429,
          headers: {
            'ratelimit-policy': '"per-ip";q=1;w=10',
            ratelimit: '"per-ip";r=0;t=8',
            'retry-after': '8',
            'content-type': PROBLEM_TYPE,
          },
          body: problem(429, ['per-ip'], 8),
        },
      },
      { handlerCalls: 1 },
    ],
  },
  {
    name: 'reject 503 when the rule says so',
    rules: [{ id: 'overload', limit: 1, window: '1s', onLimit: { action: 'reject', status: 503 } }],
    steps: [
      { send: GET('/'), expect: { status: 200 } },
      {
        send: GET('/'),
        expect: {
          status: 503,
          headers: { 'retry-after': '1', 'content-type': PROBLEM_TYPE },
          body: problem(503, ['overload'], 1),
        },
      },
    ],
  },
  {
    name: 'legacy and IETF headers together',
    rules: [{ id: 'per-ip', limit: 5, window: '1m', algorithm: 'fixed-window' }],
    options: { headers: 'both' },
    steps: [
      {
        send: GET('/'),
        expect: {
          status: 200,
          headers: {
            'ratelimit-policy': '"per-ip";q=5;w=60',
            ratelimit: '"per-ip";r=4;t=60',
            'x-ratelimit-limit': '5',
            'x-ratelimit-remaining': '4',
            // Epoch seconds, read from the wall clock: the limiter's injected clock is not it.
            'x-ratelimit-reset': /^\d{10}$/,
          },
        },
      },
    ],
  },
  {
    name: 'headers off: no RateLimit headers, Retry-After still sent on refusal',
    rules: [{ id: 'per-ip', limit: 1, window: '1m', algorithm: 'fixed-window' }],
    options: { headers: false },
    steps: [
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS } },
      {
        send: GET('/'),
        expect: { status: 429, headers: { ratelimit: undefined, 'retry-after': '60' } },
      },
    ],
  },
  {
    name: 'queue then pass',
    rules: [
      {
        id: 'smooth',
        limit: 20,
        window: '1s',
        burst: 1,
        onLimit: { action: 'queue', maxWait: '1s', maxQueue: 5 },
      },
    ],
    steps: [
      { send: GET('/'), expect: { status: 200, body: OK } },
      { send: GET('/'), expect: { status: 200, body: OK } },
      { handlerCalls: 2 },
    ],
  },
  {
    name: 'queue full rejects',
    rules: [
      {
        id: 'smooth',
        limit: 4,
        window: '1s',
        burst: 1,
        onLimit: { action: 'queue', maxWait: '1s', maxQueue: 1 },
      },
    ],
    steps: [
      { send: GET('/'), expect: { status: 200 } },
      { sendInBackground: GET('/'), expect: { status: 200, body: OK } },
      {
        send: GET('/'),
        expect: {
          status: 429,
          headers: { 'retry-after': '1', 'content-type': PROBLEM_TYPE },
          body: problem(429, ['smooth'], 1),
        },
      },
      { settle: true },
      { handlerCalls: 2 },
    ],
  },
  {
    name: 'queue: a client that leaves while queued frees its place and its tokens',
    rules: [
      {
        id: 'smooth',
        limit: 10,
        window: '1s',
        burst: 1,
        // A leaked reservation would make the next wait 200 ms (> maxWait); a leaked place, a full queue.
        onLimit: { action: 'queue', maxWait: '150ms', maxQueue: 1 },
      },
    ],
    steps: [
      { send: GET('/'), expect: { status: 200 } },
      { abortQueued: GET('/') },
      { send: GET('/'), expect: { status: 200, body: OK } },
      { handlerCalls: 2 },
    ],
  },
  {
    name: 'drop: socket destroyed, no response, handler never runs',
    rules: [{ id: 'abuse', limit: 1, window: '1m', onLimit: 'drop' }],
    steps: [
      { send: GET('/'), expect: { status: 200 } },
      { send: GET('/'), expect: { dropped: true } },
      { handlerCalls: 1 },
    ],
  },
  {
    name: 'cost: a heavy route spends the shared budget once',
    rules: [{ id: 'budget', limit: 10, window: '1m', algorithm: 'fixed-window' }],
    routes: [...DEFAULT_ROUTES, { method: 'POST', path: '/export', cost: 10 }],
    steps: [
      {
        send: { method: 'POST', path: '/export' },
        expect: { status: 200, headers: { ratelimit: '"budget";r=0;t=60' }, body: OK },
      },
      { send: GET('/'), expect: { status: 429, body: problem(429, ['budget'], 60) } },
    ],
  },
  {
    name: 'exempt route: never limited, no headers',
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    routes: [...DEFAULT_ROUTES, { method: 'GET', path: '/health', exempt: true }],
    steps: [
      { send: GET('/health'), expect: { status: 200, headers: NO_LIMIT_HEADERS } },
      { send: GET('/health'), expect: { status: 200, headers: NO_LIMIT_HEADERS } },
      { send: GET('/'), expect: { status: 200 } },
      { send: GET('/health'), expect: { status: 200 } },
      { send: GET('/'), expect: { status: 429 } },
    ],
  },
  {
    name: 'route patterns: a rule on /users/:id leaves other paths alone',
    rules: [{ id: 'users', match: 'GET /users/:id', limit: 1, window: '1m' }],
    steps: [
      { send: GET('/users/1'), expect: { status: 200 } },
      { send: GET('/users/2'), expect: { status: 429 } },
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS } },
    ],
  },
  {
    name: 'shadow: never blocks, reports through Floodgate-Shadow',
    rules: [
      { id: 'enforced', limit: 100, window: '1m', algorithm: 'fixed-window' },
      { id: 'trial', limit: 1, window: '1m', shadow: true },
    ],
    options: { shadowHeader: true },
    steps: [
      { send: GET('/'), expect: { status: 200, headers: { 'floodgate-shadow': undefined } } },
      {
        send: GET('/'),
        expect: {
          status: 200,
          headers: {
            'floodgate-shadow': 'trial',
            'ratelimit-policy': '"enforced";q=100;w=60',
            ratelimit: '"enforced";r=98;t=60',
          },
          body: OK,
        },
      },
    ],
  },
  {
    name: 'fail-open: a throwing store passes with no RateLimit headers',
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    store: 'throwing',
    steps: [
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
    ],
  },
  {
    name: 'fail-open: a hanging store passes after timeoutMs',
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    store: 'hanging',
    timeoutMs: 15,
    steps: [
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
    ],
  },
  {
    name: 'concurrency: a client abort releases the slot',
    rules: [{ id: 'in-flight', algorithm: 'concurrency', limit: 1 }],
    routes: [...DEFAULT_ROUTES, { method: 'GET', path: '/slow', slow: true }],
    steps: [
      { abortInFlight: GET('/slow') },
      { openGate: true },
      { send: GET('/slow'), expect: { status: 200, body: OK } },
      { send: GET('/slow'), expect: { status: 200, body: OK } },
    ],
  },
  {
    name: 'concurrency: a client gone before an asynchronous decision does not keep its slot',
    rules: [{ id: 'in-flight', algorithm: 'concurrency', limit: 1 }],
    timeoutMs: 10_000,
    steps: [
      { abortBeforeDecision: GET('/') },
      // The store holds the slot while its answer is on the way. A round trip over a real
      // socket also lets the server see the first client's disconnect.
      { send: GET('/'), expect: { status: 429 }, raw: true },
      { deliverHeld: true },
      { send: GET('/'), expect: { status: 200, body: OK } },
      { send: GET('/'), expect: { status: 200, body: OK } },
      { handlerCalls: 2 },
    ],
  },
  {
    name: 'queue + concurrency: a client gone before an asynchronous decision gives both back',
    rules: [
      { id: 'in-flight', algorithm: 'concurrency', limit: 1 },
      {
        id: 'smooth',
        limit: 10,
        window: '1s',
        burst: 1,
        onLimit: { action: 'queue', maxWait: '150ms', maxQueue: 1 },
      },
    ],
    timeoutMs: 10_000,
    steps: [
      { send: GET('/'), expect: { status: 200 } },
      { advanceMs: 50 },
      { abortBeforeDecision: GET('/') },
      { send: GET('/'), expect: { status: 429 }, raw: true },
      { deliverHeld: true },
      { advanceMs: 100 },
      { send: GET('/'), expect: { status: 200, body: OK } },
      { handlerCalls: 2 },
    ],
  },
  {
    name: 'fail-open: a store answering garbage (sync) passes every request',
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    store: 'garbage',
    steps: [
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
    ],
  },
  {
    name: 'fail-open: a store answering garbage (async) passes every request',
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    store: 'garbage-async',
    steps: [
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
      { send: GET('/'), expect: { status: 200, headers: NO_LIMIT_HEADERS, body: OK } },
    ],
  },
  {
    name: 'concurrency: a throwing handler releases the slot',
    rules: [{ id: 'in-flight', algorithm: 'concurrency', limit: 1 }],
    routes: [...DEFAULT_ROUTES, { method: 'GET', path: '/boom', fail: true }],
    steps: [
      { send: GET('/boom'), expect: { status: 500 } },
      { send: GET('/boom'), expect: { status: 500 } },
      { send: GET('/'), expect: { status: 200 } },
    ],
  },
  {
    name: 'IPv6 clients group by /64; IPv4-mapped addresses key as IPv4',
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    trustProxy: true,
    steps: [
      { send: GET('/', { 'x-forwarded-for': '2001:db8:1:2::1' }), expect: { status: 200 } },
      { send: GET('/', { 'x-forwarded-for': '2001:db8:1:2:ffff::9' }), expect: { status: 429 } },
      { send: GET('/', { 'x-forwarded-for': '2001:db8:1:3::1' }), expect: { status: 200 } },
      { send: GET('/', { 'x-forwarded-for': '::ffff:192.0.2.1' }), expect: { status: 200 } },
      { send: GET('/', { 'x-forwarded-for': '192.0.2.1' }), expect: { status: 429 } },
      { send: GET('/', { 'x-forwarded-for': '192.0.2.2' }), expect: { status: 200 } },
    ],
  },
  {
    name: 'spoofed X-Forwarded-For is ignored without trust proxy',
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    trustProxy: false,
    steps: [
      { send: GET('/', { 'x-forwarded-for': '198.51.100.1' }), expect: { status: 200 } },
      { send: GET('/', { 'x-forwarded-for': '198.51.100.2' }), expect: { status: 429 } },
      { send: GET('/', { 'x-forwarded-for': '198.51.100.3' }), expect: { status: 429 } },
    ],
  },
  {
    name: "draft-7 headers: express-rate-limit's combined RateLimit field",
    rules: [{ id: 'per-ip', limit: 2, window: '1m', algorithm: 'fixed-window' }],
    options: { headers: 'draft-7' },
    steps: [
      {
        send: GET('/'),
        expect: {
          status: 200,
          headers: {
            'ratelimit-policy': '2;w=60',
            ratelimit: 'limit=2, remaining=1, reset=60',
            'x-ratelimit-limit': undefined,
          },
        },
      },
      { send: GET('/'), expect: { status: 200 } },
      {
        send: GET('/'),
        expect: {
          status: 429,
          headers: {
            'ratelimit-policy': '2;w=60',
            ratelimit: 'limit=2, remaining=0, reset=60',
            'retry-after': '60',
          },
        },
      },
    ],
  },
  {
    name: 'handlers read the decision (req.rateLimit, request.rateLimit, ctx.state.rateLimit)',
    rules: [{ id: 'per-ip', limit: 3, window: '1m', algorithm: 'fixed-window' }],
    routes: [{ method: 'GET', path: '/', echo: true }],
    steps: [
      {
        send: GET('/'),
        expect: {
          status: 200,
          body: {
            ok: true,
            rateLimit: { limit: 3, remaining: 2, resetMs: 60_000, action: 'allow' },
          },
        },
      },
      { advanceMs: 15_000 },
      {
        send: GET('/'),
        expect: {
          status: 200,
          body: {
            ok: true,
            rateLimit: { limit: 3, remaining: 1, resetMs: 45_000, action: 'allow' },
          },
        },
      },
    ],
  },
  {
    name: 'deny list: addresses, ranges and IPv4-mapped spellings get 403 before any counting',
    rules: [{ id: 'per-ip', limit: 1, window: '1m', algorithm: 'fixed-window' }],
    trustProxy: true,
    limiter: {
      deny: {
        ips: ['203.0.113.0/24', '2001:db8:bad::/48', '192.0.2.1'],
        keys: { 'header:x-api-key': ['leaked-key'] },
      },
    },
    steps: [
      { send: FORWARDED('203.0.113.9'), expect: DENIED },
      { send: FORWARDED('::ffff:203.0.113.10'), expect: DENIED },
      { send: FORWARDED('2001:db8:bad:1::5'), expect: DENIED },
      { send: FORWARDED('192.0.2.1'), expect: DENIED },
      { send: FORWARDED('198.51.100.1', { 'x-api-key': 'leaked-key' }), expect: DENIED },
      // Denied requests were not counted: this client's single unit is still there.
      { send: FORWARDED('198.51.100.1'), expect: { status: 200 } },
      { send: FORWARDED('198.51.100.1'), expect: { status: 429 } },
      { send: FORWARDED('192.0.2.2'), expect: { status: 200 } },
      { handlerCalls: 2 },
    ],
  },
  {
    name: 'deny status is configurable',
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    trustProxy: true,
    limiter: { deny: { ips: ['203.0.113.0/24'] }, denyStatus: 404 },
    steps: [
      {
        send: FORWARDED('203.0.113.9'),
        expect: { status: 404, body: refused(404, 'deny-list') },
      },
    ],
  },
  {
    name: 'allow list: listed clients are never limited and get no RateLimit headers',
    rules: [{ id: 'per-ip', limit: 1, window: '1m', algorithm: 'fixed-window' }],
    trustProxy: true,
    limiter: { allow: { ips: ['10.0.0.0/8', '::ffff:172.16.0.0/108'] } },
    steps: [
      { send: FORWARDED('10.1.2.3'), expect: { status: 200, headers: NO_LIMIT_HEADERS } },
      { send: FORWARDED('10.1.2.3'), expect: { status: 200, headers: NO_LIMIT_HEADERS } },
      { send: FORWARDED('172.16.5.5'), expect: { status: 200, headers: NO_LIMIT_HEADERS } },
      { send: FORWARDED('172.16.5.5'), expect: { status: 200, headers: NO_LIMIT_HEADERS } },
      { send: FORWARDED('198.51.100.1'), expect: { status: 200 } },
      { send: FORWARDED('198.51.100.1'), expect: { status: 429 } },
    ],
  },
  {
    name: 'rule deny lists: addresses, ranges and key values in the rules get 403 (or their status) before any counting',
    rules: [
      {
        id: 'per-ip',
        limit: 1,
        window: '1m',
        algorithm: 'fixed-window',
        deny: {
          ips: ['203.0.113.0/24', '2001:db8:bad::/48'],
          keys: { 'header:x-api-key': ['leaked-key'] },
        },
      },
      {
        id: 'users',
        match: 'GET /users/:id',
        limit: 5,
        window: '1m',
        deny: { ips: ['198.51.100.0/24'], status: 404 },
      },
    ],
    trustProxy: true,
    steps: [
      { send: FORWARDED('203.0.113.9'), expect: DENIED },
      { send: FORWARDED('::ffff:203.0.113.10'), expect: DENIED },
      { send: FORWARDED('2001:db8:bad:1::5'), expect: DENIED },
      { send: FORWARDED('192.0.2.7', { 'x-api-key': 'leaked-key' }), expect: DENIED },
      {
        send: GET('/users/1', { 'x-forwarded-for': '198.51.100.1' }),
        expect: { status: 404, headers: NO_LIMIT_HEADERS, body: refused(404, 'deny-list') },
      },
      // A rule's deny list holds where the rule applies: '/' is only per-ip's.
      { send: FORWARDED('198.51.100.1'), expect: { status: 200 } },
      { send: FORWARDED('198.51.100.1'), expect: { status: 429 } },
      // Denied requests were not counted: this client's single unit is still there.
      { send: FORWARDED('192.0.2.7'), expect: { status: 200 } },
      { handlerCalls: 2 },
    ],
  },
  {
    name: 'rule allow lists: a rule does not count listed clients; the other rules still do',
    rules: [
      {
        id: 'per-ip',
        limit: 1,
        window: '1m',
        algorithm: 'fixed-window',
        allow: { ips: ['10.0.0.0/8'], keys: { 'header:x-partner': ['acme'] } },
      },
      { id: 'all', limit: 2, window: '1m', algorithm: 'fixed-window' },
    ],
    trustProxy: true,
    steps: [
      {
        send: FORWARDED('10.1.2.3'),
        expect: { status: 200, headers: { 'ratelimit-policy': '"all";q=2;w=60' } },
      },
      { send: FORWARDED('10.1.2.3'), expect: { status: 200 } },
      { send: FORWARDED('10.1.2.3'), expect: { status: 429, body: problem(429, ['all'], 60) } },
      { send: FORWARDED('198.51.100.1', { 'x-partner': 'acme' }), expect: { status: 200 } },
      { send: FORWARDED('198.51.100.1', { 'x-partner': 'acme' }), expect: { status: 200 } },
      { send: FORWARDED('198.51.100.2'), expect: { status: 200 } },
      {
        send: FORWARDED('198.51.100.2'),
        expect: { status: 429, body: problem(429, ['per-ip'], 60) },
      },
    ],
  },
  {
    name: "a rule's deny list wins over the allow option",
    rules: [{ id: 'per-ip', limit: 1, window: '1m', deny: { ips: ['10.6.6.6'] } }],
    trustProxy: true,
    limiter: { allow: { ips: ['10.0.0.0/8'] } },
    steps: [
      { send: FORWARDED('10.6.6.6'), expect: DENIED },
      { send: FORWARDED('10.1.1.1'), expect: { status: 200, headers: NO_LIMIT_HEADERS } },
      { send: FORWARDED('10.1.1.1'), expect: { status: 200, headers: NO_LIMIT_HEADERS } },
    ],
  },
  {
    name: 'ban: the refusal that earns it answers with the ban length; reset lifts it',
    rules: [{ id: 'login', limit: 1, window: '1m', ban: { after: 2, within: '1m', for: '10m' } }],
    steps: [
      { send: GET('/'), expect: { status: 200 } },
      { send: GET('/'), expect: { status: 429, body: problem(429, ['login'], 60) } },
      {
        send: GET('/'),
        expect: {
          status: 429,
          headers: { 'retry-after': '600' },
          body: problem(429, ['login'], 600),
        },
      },
      // The rule has room again; the ban still holds, for the time left.
      { advanceMs: 60_000 },
      {
        send: GET('/'),
        expect: {
          status: 429,
          headers: { 'retry-after': '540' },
          body: problem(429, ['login'], 540),
        },
      },
      {
        act: async (limiter) => {
          const [state] = await limiter.get({ ip: '127.0.0.1' })
          expect(state).toMatchObject({ bannedForMs: 540_000, remaining: 0 })
          await limiter.reset({ ip: '127.0.0.1' })
        },
      },
      { send: GET('/'), expect: { status: 200 } },
      { handlerCalls: 2 },
    ],
  },
  {
    name: 'tiers: each plan its own limit and state; get reads each tier, reset forgets them all',
    rules: [
      {
        id: 'per-plan',
        window: '1m',
        algorithm: 'fixed-window',
        tiers: {
          by: 'header:x-plan',
          values: { free: { limit: 1 }, pro: { limit: 3 } },
          default: 'free',
        },
      },
    ],
    steps: [
      {
        send: GET('/', { 'x-plan': 'pro' }),
        expect: {
          status: 200,
          headers: { 'ratelimit-policy': '"per-plan";q=3;w=60', ratelimit: '"per-plan";r=2;t=60' },
        },
      },
      { send: GET('/', { 'x-plan': 'pro' }), expect: { status: 200 } },
      { send: GET('/', { 'x-plan': 'pro' }), expect: { status: 200 } },
      { send: GET('/', { 'x-plan': 'pro' }), expect: { status: 429 } },
      // A request of no known plan gets the default tier, counted apart.
      {
        send: GET('/'),
        expect: {
          status: 200,
          headers: { 'ratelimit-policy': '"per-plan";q=1;w=60', ratelimit: '"per-plan";r=0;t=60' },
        },
      },
      { send: GET('/'), expect: { status: 429 } },
      {
        act: async (limiter) => {
          const views = await limiter.get({ ip: '127.0.0.1' })
          expect(views.map((v) => [v.tier, v.remaining])).toEqual([
            ['free', 0],
            ['pro', 0],
          ])
          await limiter.reset({ ip: '127.0.0.1' })
        },
      },
      {
        send: GET('/', { 'x-plan': 'pro' }),
        expect: { status: 200, headers: { ratelimit: '"per-plan";r=2;t=60' } },
      },
      { send: GET('/'), expect: { status: 200, headers: { ratelimit: '"per-plan";r=0;t=60' } } },
    ],
  },
  {
    name: 'a limit function: its answer is the limit; penalty and reset reach every limit it answered',
    rules: [{ id: 'per-user', limit: 1, window: '1m', algorithm: 'fixed-window' }],
    limiter: {
      limits: { 'per-user': (_req, facts) => (facts.headers['x-plan'] === 'pro' ? 3 : undefined) },
    },
    steps: [
      {
        send: GET('/', { 'x-plan': 'pro' }),
        expect: {
          status: 200,
          headers: { 'ratelimit-policy': '"per-user";q=3;w=60', ratelimit: '"per-user";r=2;t=60' },
        },
      },
      { send: GET('/'), expect: { status: 200, headers: { ratelimit: '"per-user";r=0;t=60' } } },
      {
        act: async (limiter) => {
          const views = await limiter.get({ ip: '127.0.0.1' })
          expect(views.map((v) => [v.limit, v.remaining])).toEqual([
            [1, 0],
            [3, 2],
          ])
          await limiter.reset({ ip: '127.0.0.1' })
        },
      },
      { send: GET('/'), expect: { status: 200, headers: { ratelimit: '"per-user";r=0;t=60' } } },
      {
        send: GET('/', { 'x-plan': 'pro' }),
        expect: { status: 200, headers: { ratelimit: '"per-user";r=2;t=60' } },
      },
    ],
  },
  {
    name: "count: 'failed': successful responses are given back, failed ones stay counted",
    rules: [{ id: 'login', limit: 2, window: '1m', algorithm: 'fixed-window', count: 'failed' }],
    routes: [...DEFAULT_ROUTES, { method: 'GET', path: '/boom', fail: true }],
    // Over real sockets: a response's outcome is read when it closes, which Fastify's inject
    // does not emulate.
    steps: [
      { send: GET('/'), expect: { status: 200 }, raw: true },
      { refunds: 1 },
      { send: GET('/'), expect: { status: 200 }, raw: true },
      { refunds: 2 },
      {
        send: GET('/'),
        expect: { status: 200, headers: { ratelimit: '"login";r=1;t=60' } },
        raw: true,
      },
      { refunds: 3 },
      { send: GET('/boom'), expect: { status: 500 }, raw: true },
      { send: GET('/boom'), expect: { status: 500 }, raw: true },
      {
        send: GET('/boom'),
        expect: { status: 429, body: problem(429, ['login'], 60) },
        raw: true,
      },
      { send: GET('/'), expect: { status: 429 }, raw: true },
      { handlerCalls: 5 },
    ],
  },
  {
    name: "count: 'successful': failed responses are given back, successful ones stay counted",
    rules: [{ id: 'api', limit: 2, window: '1m', algorithm: 'fixed-window', count: 'successful' }],
    routes: [...DEFAULT_ROUTES, { method: 'GET', path: '/boom', fail: true }],
    steps: [
      { send: GET('/boom'), expect: { status: 500 }, raw: true },
      { refunds: 1 },
      { send: GET('/boom'), expect: { status: 500 }, raw: true },
      { refunds: 2 },
      { send: GET('/boom'), expect: { status: 500 }, raw: true },
      { refunds: 3 },
      { send: GET('/'), expect: { status: 200 }, raw: true },
      { send: GET('/'), expect: { status: 200 }, raw: true },
      { send: GET('/'), expect: { status: 429, body: problem(429, ['api'], 60) }, raw: true },
      { handlerCalls: 5 },
    ],
  },
  {
    name: "unmatched: 'reject' answers 503 to a request no rule matches",
    rules: [{ id: 'users', match: 'GET /users/:id', limit: 5, window: '1m' }],
    limiter: { unmatched: 'reject' },
    steps: [
      {
        send: GET('/'),
        expect: {
          status: 503,
          headers: { ...NO_LIMIT_HEADERS, 'content-type': PROBLEM_TYPE },
          body: refused(503, 'unmatched'),
        },
      },
      { send: GET('/users/7'), expect: { status: 200 } },
      { handlerCalls: 1 },
    ],
  },
]
