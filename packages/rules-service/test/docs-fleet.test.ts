import { afterEach, describe, expect, it, vi } from 'vitest'
import type { httpRules, Limiter } from '@floodgate/core'
import { startRulesService } from '@floodgate/rules-service'
import { coveredSnippets, docSnippets, docsHarness, where } from '@floodgate/docs-snippets'
import { TOKENS } from './helpers.js'

// The fleet parts of the docs, run: the reporting host of docs/rules-service.md against a
// running service, and the report format shown in docs/observability.md posted to it.
const [, , reporting] = coveredSnippets('rules-service.md', 3)
const [format] = docSnippets('observability.md', ['json'])
const { runner, itTypeChecks } = docsHarness(new URL('..', import.meta.url))
afterEach(() => {
  vi.unstubAllEnvs()
  vi.unstubAllGlobals()
})

const RULES = [
  { id: 'api-per-key', key: 'header:x-api-key', limit: 1, window: '1m' },
  { id: 'export-shadow', key: 'header:x-api-key', limit: 1, window: '1m', shadow: true },
]

async function withService(use: (url: string) => Promise<void>): Promise<void> {
  const service = await startRulesService({
    port: 0,
    services: ['checkout'],
    tokens: [
      { name: 'ops', role: 'admin', token: TOKENS.admin },
      { name: 'hosts', role: 'read', token: TOKENS.reader },
    ],
  })
  try {
    const put = await fetch(`${service.url}/v1/services/checkout/rules`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${TOKENS.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ rules: RULES }),
    })
    expect(put.status).toBe(200)
    await use(service.url)
  } finally {
    await service.stop()
  }
}

const fleetOf = async (url: string) =>
  (await (
    await fetch(`${url}/v1/services/checkout/fleet`, {
      headers: { authorization: `Bearer ${TOKENS.reader}` },
    })
  ).json()) as {
    hosts: { host: string }[]
    rules: { id: string; totals: Record<string, number>; top: { client: string }[] }[]
  }

describe('docs: what hosts report', () => {
  it(`${where(reporting!)}: a host with report on shows up in GET …/fleet, clients hashed`, async () => {
    await withService(async (url) => {
      vi.stubEnv('FLOODGATE_READ_TOKEN', TOKENS.reader)
      vi.stubEnv('FLOODGATE_CLIENT_SALT', 'a-shared-secret-salt')
      const shown = 'http://rules.internal:8080'
      const realFetch = globalThis.fetch
      vi.stubGlobal('fetch', (input: string | URL, init?: RequestInit) =>
        realFetch(input.toString().replace(shown, url), init),
      )
      const built = await runner.run(reporting!, { after: 'export { rules, limiter }' })
      const limiter = built.limiter as Limiter
      const rules = built.rules as ReturnType<typeof httpRules>
      try {
        await limiter.ready
        for (let i = 0; i < 3; i++) {
          await limiter.check({
            method: 'GET',
            path: '/',
            ip: '127.0.0.1',
            headers: { 'x-api-key': 'tenant-a' },
          })
        }
        await rules.poll()
        const view = await fleetOf(url)
        expect(view.hosts.map((h) => h.host)).toEqual([`checkout-${process.pid}`])
        const api = view.rules.find((r) => r.id === 'api-per-key')
        expect(api?.totals).toMatchObject({ allowed: 1, rejected: 2 })
        expect(api?.top.map((c) => c.client)).toEqual([
          expect.stringMatching(/^sha256:[0-9a-f]{16}$/),
        ])
        expect(JSON.stringify(view)).not.toContain('tenant-a')
      } finally {
        await limiter.close()
      }
    })
  }, 60_000)

  it(`${where(format!)}: the report shown is one the service accepts`, async () => {
    await withService(async (url) => {
      const res = await fetch(`${url}/v1/services/checkout/report`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKENS.reader}`, 'content-type': 'application/json' },
        body: format!.code,
      })
      expect(res.status).toBe(200)
      const view = await fleetOf(url)
      expect(view.rules.find((r) => r.id === 'export-shadow')?.totals.shadowRejected).toBe(17)
    })
  }, 60_000)
})

itTypeChecks()
