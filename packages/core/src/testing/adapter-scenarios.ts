import type { AdapterScenario } from './scenario-types.js'
import {
  DEFAULT_ROUTES,
  DENIED,
  FORWARDED,
  GET,
  JSON_TYPE,
  NO_LIMIT_HEADERS,
  OK,
  PROBLEM_TYPE,
  problem,
  refused,
} from './scenario-fixtures.js'
import { failOpenScenarios } from './scenarios-fail-open.js'
import { listAndClientStateScenarios } from './scenarios-lists-and-client-state.js'
import { queueAndSlotScenarios } from './scenarios-queue-and-slots.js'

// The table every adapter runs (through describeAdapterScenarios): the same requests and the
// same literal expectations for Express, Fastify and Koa.

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
    name: 'legacy and IETF headers together; the epoch reset is the window end second',
    rules: [{ id: 'per-ip', limit: 2, window: '1m', algorithm: 'fixed-window' }],
    options: { headers: 'both' },
    // The clock starts on a minute (epoch second 1699999980): the window ends at 1700000040,
    // counted from the limiter's clock when it decided, whatever the wall clock says then.
    steps: [
      {
        send: GET('/'),
        expect: {
          status: 200,
          headers: {
            'ratelimit-policy': '"per-ip";q=2;w=60',
            ratelimit: '"per-ip";r=1;t=60',
            'x-ratelimit-limit': '2',
            'x-ratelimit-remaining': '1',
            'x-ratelimit-reset': '1700000040',
          },
        },
      },
      { advanceMs: 999 },
      {
        send: GET('/'),
        expect: {
          status: 200,
          headers: {
            ratelimit: '"per-ip";r=0;t=60',
            'x-ratelimit-remaining': '0',
            'x-ratelimit-reset': '1700000040',
          },
        },
      },
      { advanceMs: 1 },
      {
        send: GET('/'),
        expect: {
          status: 429,
          headers: {
            ratelimit: '"per-ip";r=0;t=59',
            'retry-after': '59',
            'x-ratelimit-remaining': '0',
            'x-ratelimit-reset': '1700000040',
          },
          body: problem(429, ['per-ip'], 59),
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
  ...queueAndSlotScenarios,
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
    name: 'drop: a request pipelined behind another is dropped with its connection',
    rules: [{ id: 'abuse', limit: 1, window: '1m', onLimit: 'drop' }],
    steps: [
      // The second response waits behind the first, so it has no socket of its own yet.
      { closesPipelined: [GET('/'), GET('/'), GET('/')], answered: 1 },
      { handlerCalls: 1 },
      { send: GET('/'), expect: { dropped: true } },
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
  ...failOpenScenarios,
  ...listAndClientStateScenarios,
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
