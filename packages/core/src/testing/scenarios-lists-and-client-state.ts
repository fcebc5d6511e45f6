import { expect } from 'vitest'
import type { AdapterScenario } from './scenario-types.js'
import {
  DEFAULT_ROUTES,
  DENIED,
  FORWARDED,
  GET,
  NO_LIMIT_HEADERS,
  problem,
  refused,
} from './scenario-fixtures.js'

// Rows of the adapter scenario table for the rules' deny and allow lists and for the state a
// client is counted under (bans, tiers, limit functions, counting by outcome).
export const listAndClientStateScenarios: readonly AdapterScenario[] = [
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
    name: 'tiers: each plan its own limit and state, a downgrade never keeps what the higher plan had left; get reads each tier, reset forgets them all',
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
      // Downgraded with 2 left on pro: a request of no known plan gets the default tier, free,
      // counted apart; its 1 unit, never what pro had left.
      {
        send: GET('/'),
        expect: {
          status: 200,
          headers: { 'ratelimit-policy': '"per-plan";q=1;w=60', ratelimit: '"per-plan";r=0;t=60' },
        },
      },
      { send: GET('/'), expect: { status: 429 } },
      { send: GET('/', { 'x-plan': 'free' }), expect: { status: 429 } },
      // Back on pro: its state as it was left.
      {
        send: GET('/', { 'x-plan': 'pro' }),
        expect: { status: 200, headers: { ratelimit: '"per-plan";r=1;t=60' } },
      },
      { send: GET('/', { 'x-plan': 'pro' }), expect: { status: 200 } },
      { send: GET('/', { 'x-plan': 'pro' }), expect: { status: 429 } },
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
    name: 'an asynchronous limit function: the limit it resolves to, the rule its own without an answer',
    rules: [{ id: 'per-user', limit: 1, window: '1m', algorithm: 'fixed-window' }],
    limiter: {
      limits: {
        'per-user': async (_req, facts) => {
          // A plan looked up elsewhere: answered on a later turn, as a cache or database does.
          await new Promise((resolve) => setImmediate(resolve))
          return facts.headers['x-plan'] === 'pro' ? { limit: 3, window: '2m' } : undefined
        },
      },
    },
    steps: [
      {
        send: GET('/', { 'x-plan': 'pro' }),
        expect: {
          status: 200,
          // Fixed windows are aligned to the clock: this 2-minute one ends in 60 s.
          headers: {
            'ratelimit-policy': '"per-user";q=3;w=120',
            ratelimit: '"per-user";r=2;t=60',
          },
        },
      },
      {
        send: GET('/'),
        expect: {
          status: 200,
          headers: { 'ratelimit-policy': '"per-user";q=1;w=60', ratelimit: '"per-user";r=0;t=60' },
        },
      },
      { send: GET('/'), expect: { status: 429 } },
      { send: GET('/', { 'x-plan': 'pro' }), expect: { status: 200 } },
      { handlerCalls: 3 },
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
    name: 'match: false: no request counted under the rule, whatever its path; limiter.limit() counts events under it',
    rules: [
      { id: 'per-ip', limit: 5, window: '1m', algorithm: 'fixed-window' },
      { id: 'events', match: false, limit: 1, window: '1m', algorithm: 'fixed-window' },
    ],
    routes: [...DEFAULT_ROUTES, { method: 'GET', path: '/never' }],
    steps: [
      {
        send: GET('/'),
        expect: {
          status: 200,
          headers: { 'ratelimit-policy': '"per-ip";q=5;w=60', ratelimit: '"per-ip";r=4;t=60' },
        },
      },
      { send: GET('/never'), expect: { status: 200, headers: { ratelimit: '"per-ip";r=3;t=60' } } },
      {
        send: GET('/users/1'),
        expect: { status: 200, headers: { ratelimit: '"per-ip";r=2;t=60' } },
      },
      {
        act: async (limiter) => {
          const [events] = await limiter.get({ ip: '127.0.0.1' }, { rule: 'events' })
          expect(events).toMatchObject({ remaining: 1 })
          expect(await limiter.limit('127.0.0.1', { rule: 'events' })).toMatchObject({
            allowed: true,
          })
          expect(await limiter.limit('127.0.0.1', { rule: 'events' })).toMatchObject({
            allowed: false,
          })
        },
      },
      // The events rule is spent; requests are still counted by per-ip alone.
      { send: GET('/never'), expect: { status: 200, headers: { ratelimit: '"per-ip";r=1;t=60' } } },
      { handlerCalls: 4 },
    ],
  },
]
