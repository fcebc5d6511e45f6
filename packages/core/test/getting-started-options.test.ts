import { describe, expect, it } from 'vitest'
import type { AdapterLimiterOptions } from '../src/http/adapter-options.js'
import { readDoc } from '@floodgate/docs-snippets'

// Every limiter option an adapter accepts, each saying whether the adapters' getting-started
// pages name it. A `Record` over the type's keys: an option added to `LimiterOptions` fails
// the typecheck here until it is listed, and then this test until the pages name it.
const LIMITER_OPTIONS: Record<keyof AdapterLimiterOptions<unknown>, boolean> = {
  store: true,
  keys: true,
  limits: true,
  ipv6Subnet: true,
  clock: true,
  decisionTimeoutMs: true,
  // The old name of decisionTimeoutMs: documented in limiter.md only, as deprecated.
  timeoutMs: false,
  stateTimeoutMs: true,
  closeTimeoutMs: true,
  onDecision: true,
  failOpenLogIntervalMs: true,
  topClients: true,
  deny: true,
  denyStatus: true,
  allow: true,
  unmatched: true,
}

const pages = ['getting-started-express.md', 'getting-started-fastify.md', 'getting-started-koa.md']

describe('getting-started option lists', () => {
  for (const page of pages) {
    it(`docs/${page} names every limiter option an adapter accepts`, () => {
      const text = readDoc(page)
      const missing = Object.entries(LIMITER_OPTIONS)
        .filter(([name, documented]) => documented && !text.includes(`\`${name}\``))
        .map(([name]) => name)
      expect(missing).toEqual([])
    })
  }
})
