import type { AdapterScenario } from './scenario-types.js'
import { GET, NO_LIMIT_HEADERS, OK } from './scenario-fixtures.js'

/** Adapter scenarios for a store that throws, hangs or answers garbage: the request passes. */
export const failOpenScenarios: readonly AdapterScenario[] = [
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
]
