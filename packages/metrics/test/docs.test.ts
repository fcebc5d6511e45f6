import { describe, expect, it, vi } from 'vitest'
import type { Limiter } from '@floodgate/core'
import type { MeterProvider } from '@opentelemetry/sdk-metrics'
import { coveredSnippets, docSnippets, docsHarness, readDoc, where } from '@floodgate/docs-snippets'
import { parseExposition, valueOf } from './exposition.js'

// Every ```ts block of docs/observability.md runs here: the three /metrics mounts through real
// HTTP (a request, then a scrape), the OpenTelemetry setup, and the topClients example.
const page = 'observability.md'
const [express, fastify, koa, otel, topClients] = coveredSnippets(page, 5)
const { runner, ports, itTypeChecks } = docsHarness(new URL('..', import.meta.url))

async function requestThenScrape(): Promise<string> {
  const base = await ports().url()
  const res = await fetch(`${base}/`)
  expect(res.status).toBe(200)
  expect(await res.json()).toEqual({ hello: 'world' })
  const scrape = await fetch(`${base}/metrics`)
  expect(scrape.status).toBe(200)
  expect(scrape.headers.get('content-type')).toContain('text/plain')
  return scrape.text()
}

describe(`docs/${page}`, () => {
  for (const [name, snippet] of [
    ['Express', express],
    ['Fastify', fastify],
    ['Koa', koa],
  ] as const) {
    it(`${where(snippet!)}: ${name} serves /metrics, unlimited, with the request counted`, async () => {
      await runner.run(snippet!)
      const text = await requestThenScrape()
      const m = parseExposition(text)
      expect(valueOf(m, 'floodgate_decisions_total', { outcome: 'allowed' })).toBe(1)
      expect(
        valueOf(m, 'floodgate_rule_decisions_total', { rule: 'per-ip', outcome: 'allowed' }),
      ).toBe(1)
      // The scrape shown on the page is what a scrape holds.
      const [shown] = docSnippets(page, ['text'])
      for (const line of shown!.code.trim().split('\n')) expect(text).toContain(line)
    })
  }

  it(`${where(otel!)}: the OpenTelemetry setup exports the limiter's instruments`, async () => {
    const { provider, limiter } = (await runner.run(otel!, {
      after: 'export { provider, limiter }',
    })) as { provider: MeterProvider; limiter: Limiter }
    const printed: unknown[] = []
    vi.spyOn(console, 'dir').mockImplementation((x: unknown) => void printed.push(x))
    await limiter.check({ method: 'GET', path: '/', ip: '203.0.113.7', headers: {} })
    await provider.forceFlush()
    await provider.shutdown()
    const names = printed.map((x) => (x as { descriptor: { name: string } }).descriptor.name)
    expect(names).toEqual(
      expect.arrayContaining(['floodgate.decisions', 'floodgate.rule.decisions']),
    )
  })

  it(`${where(topClients!)}: topClients lists the refused client, hashed`, async () => {
    const { top, limiter } = (await runner.run(topClients!, {
      after: 'export { top, limiter }',
    })) as { top: unknown; limiter: Limiter }
    expect(top).toEqual([
      { client: expect.stringMatching(/^sha256:[0-9a-f]{16}$/), count: 3, error: 0 },
    ])
    expect(limiter.topClients('per-key')).toEqual(top)
  })

  it('names the metrics the exporters make', () => {
    const doc = readDoc(page)
    for (const name of [
      'floodgate_decisions_total',
      'floodgate_rule_decisions_total',
      'floodgate_queue_wait_seconds',
      'floodgate_store_latency_seconds',
      'floodgate_in_flight',
      'floodgate.decisions',
      'floodgate.rule.decisions',
      'floodgate.queue.wait',
      'floodgate.store.latency',
      'floodgate.in_flight',
    ])
      expect(doc).toContain(`\`${name}\``)
  })

  itTypeChecks()
})
