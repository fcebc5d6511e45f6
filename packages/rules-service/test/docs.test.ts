import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import type { FastifyInstance } from 'fastify'
import {
  createRulesService,
  openPgliteDb,
  startRulesService,
  type RulesServiceApp,
} from '@floodgate/rules-service'
import { baseUrl, coveredSnippets, docsHarness, readDoc, where } from '@floodgate/docs-snippets'
import { parseCli } from '../src/cli-options.js'
import {
  DATABASE_URL,
  TOKENS,
  dropSchema,
  postgresAvailable,
  uniqueSchema,
  waitFor,
} from './helpers.js'

// Every ```ts block of docs/rules-service.md runs here: starting the service in code (PGlite in
// a data directory, as shown) and a Fastify host polling a service on the PostgreSQL at
// DATABASE_URL. The tokens file shown is loaded as --tokens-file, and the curl walkthrough is
// replayed to check the answers the page shows.
const page = 'rules-service.md'
// The third block (hosts that report) runs in docs-fleet.test.ts.
const [inCode, hostConnects] = coveredSnippets(page, 3)
const [tokensFile] = coveredSnippets(page, 1, ['json'])
// Its FreePorts make the snippet's port 8080 a free one.
const { runner, itTypeChecks } = docsHarness(new URL('..', import.meta.url))
afterEach(() => {
  vi.unstubAllEnvs()
  vi.unstubAllGlobals()
})

const hasPostgres = await postgresAvailable()
// PGlite runs initdb in WebAssembly: seconds on a busy machine, so its tests get a minute.
const PGLITE_MS = 60_000

/** A temporary directory, removed after `use` ends. */
async function inTempDir<T>(use: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'floodgate-docs-'))
  try {
    return await use(dir)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

describe(`docs/${page}`, () => {
  it(
    `${where(inCode!)}: startRulesService keeps the rules in the data directory`,
    async () => {
      vi.stubEnv('FLOODGATE_ADMIN_TOKEN', TOKENS.admin)
      vi.stubEnv('FLOODGATE_READ_TOKEN', TOKENS.reader)
      await inTempDir(async (dir) => {
        // The snippet's './.floodgate-data' lands in the temporary directory.
        const cwd = process.cwd()
        process.chdir(dir)
        try {
          await runner.run(inCode!)
        } finally {
          process.chdir(cwd)
        }
        // Stopped: a new service on the same directory finds the service the snippet created.
        const again = await startRulesService({
          port: 0,
          dataDir: join(dir, '.floodgate-data'),
          tokens: [{ name: 'hosts', role: 'read', token: TOKENS.reader }],
        })
        try {
          const res = await fetch(`${again.url}/v1/services/checkout/ruleset`, {
            headers: { authorization: `Bearer ${TOKENS.reader}` },
          })
          expect(await res.json()).toEqual({
            service: 'checkout',
            revision: 0,
            version: expect.stringMatching(/^0-[0-9a-f]{32}$/),
            rules: [],
          })
        } finally {
          await again.stop()
        }
      })
    },
    PGLITE_MS,
  )

  it(
    'the tokens file shown works as --tokens-file',
    async () => {
      const env = {
        CHECKOUT_TOKEN: 'checkout-token-0123456789',
        SEARCH_TOKEN: 'search-token-0123456789ab',
        HOSTS_TOKEN: TOKENS.reader,
      }
      await inTempDir(async (dir) => {
        const file = join(dir, 'tokens.json')
        writeFileSync(file, tokensFile!.code)
        const { options } = parseCli(['serve', '--tokens-file', file], env)
        const app = await createRulesService({ tokens: options.tokens, db: await openPgliteDb() })
        try {
          const put = (service: string, token: string) =>
            app.inject({
              method: 'PUT',
              url: `/v1/services/${service}/rules/r`,
              headers: { authorization: `Bearer ${token}` },
              payload: { id: 'r', limit: 1, window: '1s' },
            })
          // Each team writes its own service (named in its token, so it exists) and no other.
          expect((await put('checkout', env.CHECKOUT_TOKEN)).statusCode).toBe(201)
          expect((await put('search', env.SEARCH_TOKEN)).statusCode).toBe(201)
          expect((await put('search', env.CHECKOUT_TOKEN)).statusCode).toBe(403)
          expect((await put('checkout', env.HOSTS_TOKEN)).statusCode).toBe(403)
          // A read token exists, so reads need one.
          const read = (token?: string) =>
            app.inject({
              url: '/v1/services/search/ruleset',
              headers: token ? { authorization: `Bearer ${token}` } : {},
            })
          expect((await read()).statusCode).toBe(401)
          expect((await read(env.HOSTS_TOKEN)).statusCode).toBe(200)
        } finally {
          await app.close()
        }
      })
    },
    PGLITE_MS,
  )

  describe('the curl walkthrough', () => {
    let app: RulesServiceApp
    let rules: string
    /** The set's ETag, as the walkthrough reads it into $ETAG. */
    let etag = ''
    // As `floodgate-rules serve --service checkout` with FLOODGATE_ADMIN_TOKEN, in memory.
    beforeAll(async () => {
      const { options } = parseCli(['serve', '--service', 'checkout'], {
        FLOODGATE_ADMIN_TOKEN: TOKENS.admin,
      })
      app = await createRulesService({ ...options, dataDir: undefined, logger: false })
      await app.listen({ port: 0, host: '127.0.0.1' })
      rules = `${baseUrl(app.server)}/v1/services/checkout/rules`
    })
    afterAll(() => app?.close())

    const auth = { authorization: `Bearer ${TOKENS.admin}` }
    const json = { ...auth, 'content-type': 'application/json' }
    const shows = (text: string) => expect(readDoc(page)).toContain(text)

    it('creates a rule', async () => {
      const rule = { id: 'api-per-user', match: '/api/**', key: 'user', rate: '100/1m' }
      const res = await fetch(rules, { method: 'POST', headers: json, body: JSON.stringify(rule) })
      expect(res.status).toBe(201)
      expect(await res.json()).toEqual({
        service: 'checkout',
        revision: 1,
        version: expect.stringMatching(/^1-[0-9a-f]{32}$/),
        rule,
      })
      shows(`-d '${JSON.stringify(rule)}'`)
      shows(
        '# {"service":"checkout","revision":1,"version":"1-9c1f…","rule":{"id":"api-per-user",…}}',
      )
    })

    it('answers /healthz after a database round trip', async () => {
      const res = await fetch(rules.replace(/\/v1\/.*$/, '/healthz'))
      expect(await res.json()).toEqual({ status: 'ok', storage: 'pglite' })
      shows("`{ status: 'ok', storage: 'pglite' \\| 'postgres' }`")
    })

    it('serves the set with an ETag, and a 304 while unchanged', async () => {
      const ruleset = rules.replace(/rules$/, 'ruleset')
      const res = await fetch(ruleset)
      expect(res.status).toBe(200)
      etag = res.headers.get('etag') ?? ''
      expect(etag).toMatch(/^"1-[0-9a-f]{32}"$/)
      expect((await fetch(ruleset, { headers: { 'if-none-match': etag } })).status).toBe(304)
      shows('# 200, ETag: "1-9c1f…"')
      shows('-H "If-None-Match: $ETAG"')
      shows('# 304 Not Modified')
    })

    it('patches only if the set is still as read', async () => {
      const patch = (revision: string) =>
        fetch(`${rules}/api-per-user`, {
          method: 'PATCH',
          headers: {
            ...auth,
            'content-type': 'application/merge-patch+json',
            'if-match': revision,
          },
          body: '{"rate":"200/1m"}',
        })
      shows('-H "If-Match: $ETAG"')
      const res = await patch(etag)
      expect(res.status).toBe(200)
      expect(await res.json()).toMatchObject({ revision: 2, rule: { rate: '200/1m' } })
      const stale = await patch(etag)
      expect(stale.status).toBe(412)
      expect(await stale.json()).toMatchObject({ revision: 2 })
    })

    it('refuses an invalid rule with the problem shown', async () => {
      const res = await fetch(rules, {
        method: 'POST',
        headers: json,
        body: '{"id":"export","match":"POST /export","limit":-1,"window":"1h"}',
      })
      expect(res.status).toBe(400)
      const body = (await res.json()) as Record<string, unknown>
      expect(body).toEqual({
        type: expect.stringMatching(/#problem-invalid-rules$/),
        title: 'Invalid rules',
        status: 400,
        detail: 'rules[0].limit: expected a positive integer, got -1',
        errors: ['rules[0].limit: expected a positive integer, got -1'],
      })
      shows(`#  "detail":"${body.detail as string}",`)
      shows(`#  "errors":${JSON.stringify(body.errors)}}`)
    })

    it('a whole-set PUT of the same rules changes nothing', async () => {
      const current = (await (await fetch(rules)).json()) as { revision: number; rules: unknown[] }
      const res = await fetch(rules, {
        method: 'PUT',
        headers: json,
        body: JSON.stringify({ rules: current.rules }),
      })
      expect(res.status).toBe(200)
      expect(await res.json()).toMatchObject({ revision: current.revision })
    })

    it('lists who changed what, newest first', async () => {
      const res = await fetch(`${rules.replace(/rules$/, 'audit')}?limit=10`, { headers: auth })
      const body = (await res.json()) as { service: string; entries: Record<string, unknown>[] }
      expect(body.service).toBe('checkout')
      const [patch] = body.entries
      // The token FLOODGATE_ADMIN_TOKEN gives is named `admin`; entry 1 is the create.
      expect(patch).toMatchObject({
        id: 2,
        service: 'checkout',
        ruleId: 'api-per-user',
        actor: 'admin',
        action: 'patch',
        revision: 2,
        before: { rate: '100/1m' },
        after: { rate: '200/1m' },
      })
      expect(Object.keys(patch!)).toEqual([
        'id',
        'service',
        'ruleId',
        'actor',
        'action',
        'revision',
        'before',
        'after',
        'at',
      ])
      shows('{"id":2,"service":"checkout","ruleId":"api-per-user",\n')
      shows('#   "actor":"admin","action":"patch","revision":2,"before":{…},"after":{…},\n')
    })
  })

  describe.skipIf(!hasPostgres)('on PostgreSQL', () => {
    const schema = uniqueSchema('fg_docs_test')
    afterAll(() => dropSchema(schema))

    it(`${where(hostConnects!)}: a Fastify host enforces the service's rules`, async () => {
      const service = await startRulesService({
        port: 0,
        databaseUrl: DATABASE_URL,
        schema,
        services: ['checkout'],
        tokens: [
          { name: 'ops', role: 'admin', token: TOKENS.admin },
          { name: 'hosts', role: 'read', token: TOKENS.reader },
        ],
      })
      let host: FastifyInstance | undefined
      try {
        const created = await fetch(`${service.url}/v1/services/checkout/rules`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKENS.admin}`, 'content-type': 'application/json' },
          body: JSON.stringify({ id: 'per-ip', limit: 2, window: '1m' }),
        })
        expect(created.status).toBe(201)
        vi.stubEnv('FLOODGATE_READ_TOKEN', TOKENS.reader)
        // rules.internal:8080 is this test's service, as a DNS entry would make it.
        const shown = 'http://rules.internal:8080'
        const realFetch = globalThis.fetch
        vi.stubGlobal('fetch', (input: string | URL, init?: RequestInit) =>
          realFetch(input.toString().replace(shown, service.url), init),
        )
        const built = await runner.run(hostConnects!, {
          before: "import Fastify from 'fastify'\nconst app = Fastify()",
          after: "app.get('/', async () => ({ ok: true }))\nexport { app }",
        })
        host = built.app as FastifyInstance
        await host.listen({ port: 0, host: '127.0.0.1' })
        const url = baseUrl(host.server)
        await waitFor(
          async () => (await fetch(url)).headers.get('ratelimit-policy') === '"per-ip";q=2;w=60',
          "the service's rule",
        )
        await waitFor(async () => (await fetch(url)).status === 429, 'a refusal')
      } finally {
        await host?.close()
        await service.stop()
      }
    })
  })
})

itTypeChecks()
