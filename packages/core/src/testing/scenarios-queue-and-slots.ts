import { expect } from 'vitest'
import type { AdapterScenario } from './scenario-types.js'
import { DEFAULT_ROUTES, GET, OK, PROBLEM_TYPE, problem } from './scenario-fixtures.js'

/** Adapter scenarios for what a request holds: queue places, reserved tokens, concurrency slots. */
export const queueAndSlotScenarios: readonly AdapterScenario[] = [
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
    name: 'queue: a request still waiting when the limiter closes is answered 429 with Retry-After, not left hanging',
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
      {
        sendInBackground: GET('/'),
        expect: {
          status: 429,
          headers: { 'retry-after': '1', 'content-type': PROBLEM_TYPE },
          body: problem(429, ['smooth'], 1),
        },
      },
      { act: (limiter) => limiter.close() },
      { settle: true },
      { handlerCalls: 1 },
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
    name: 'concurrency: a client that leaves with pipelined requests in flight releases every slot',
    rules: [{ id: 'in-flight', algorithm: 'concurrency', limit: 3 }],
    routes: [...DEFAULT_ROUTES, { method: 'GET', path: '/slow', slow: true }],
    steps: [
      // The second and third responses wait behind the first: they have no socket yet.
      { abortPipelined: [GET('/slow'), GET('/slow'), GET('/slow')], refunds: 3 },
      { sendInBackground: GET('/slow'), expect: { status: 200, body: OK } },
      { sendInBackground: GET('/slow'), expect: { status: 200, body: OK } },
      { sendInBackground: GET('/slow'), expect: { status: 200, body: OK } },
      { openGate: true },
      { settle: true },
    ],
  },
  {
    name: 'queue: a pipelined request that waits its turn behind another is given back when the client leaves',
    rules: [
      {
        id: 'smooth',
        limit: 10,
        window: '1s',
        burst: 1,
        // One place: with an asynchronous store both requests are in flight at once, and the
        // first, which passes at once, takes no place.
        onLimit: { action: 'queue', maxWait: '1s', maxQueue: 1 },
      },
    ],
    routes: [...DEFAULT_ROUTES, { method: 'GET', path: '/slow', slow: true }],
    steps: [
      // The first holds the connection in its handler; the second is queued behind it.
      { abortPipelined: [GET('/slow'), GET('/slow')], refunds: 1 },
      // Its reservation was refunded: the next request waits no longer than the first one's.
      { advanceMs: 100 },
      { send: GET('/'), expect: { status: 200, body: OK } },
      { openGate: true },
      { handlerCalls: 2 },
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
    name: 'adaptive + token bucket: a client gone before an asynchronous decision does not keep its slot',
    rules: [
      {
        id: 'shed',
        algorithm: 'adaptive',
        // One slot, whatever the latency: a slot kept by the client that left refuses the rest.
        adaptive: {
          target: '1s',
          window: '1s',
          minSamples: 1,
          initialLimit: 1,
          minLimit: 1,
          maxLimit: 1,
        },
      },
      { id: 'per-ip', limit: 100, window: '1m' },
    ],
    timeoutMs: 10_000,
    steps: [
      { abortBeforeDecision: GET('/') },
      // The adaptive slot is taken when the store's answer comes; a round trip over a real
      // socket first lets the server see the first client's disconnect.
      { send: GET('/'), expect: { status: 200, body: OK }, raw: true },
      { deliverHeld: true },
      { send: GET('/'), expect: { status: 200, body: OK } },
      { send: GET('/'), expect: { status: 200, body: OK } },
      { handlerCalls: 3 },
      // The request never served is released as abandoned: the window measured the three
      // responses, not the client that left (its near-zero latency would pull p99 down).
      { advanceMs: 1_000 },
      {
        act: async (limiter) => {
          await expect.poll(() => limiter.adaptive('shed')?.samples).toBe(3)
        },
      },
    ],
  },
  {
    name: 'a client gone before the limiter saw its request is not checked, charged or served',
    // Node reads the client's address from the live socket: once it is closed the address is
    // unknown, and every such client would share one bucket.
    rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
    steps: [
      { leaveBeforeLimiter: GET('/') },
      { leaveBeforeLimiter: GET('/') },
      { handlerCalls: 0 },
      {
        act: (limiter) => {
          const { allowed, rejected } = limiter.counters().total
          expect({ allowed, rejected }).toStrictEqual({ allowed: 0, rejected: 0 })
          return Promise.resolve()
        },
      },
      { send: GET('/'), expect: { status: 200, body: OK } },
      { handlerCalls: 1 },
    ],
  },
  {
    name: 'adaptive: a throwing handler releases the slot',
    rules: [
      {
        id: 'shed',
        algorithm: 'adaptive',
        adaptive: { target: '1s', window: '1m', initialLimit: 1, minLimit: 1, maxLimit: 1 },
      },
    ],
    routes: [...DEFAULT_ROUTES, { method: 'GET', path: '/boom', fail: true }],
    steps: [
      { send: GET('/boom'), expect: { status: 500 } },
      { send: GET('/boom'), expect: { status: 500 } },
      { send: GET('/'), expect: { status: 200 } },
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
]
