import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createRulesService,
  migrate,
  migrations,
  openPgDb,
  openPgliteDb,
  type Db,
  type RulesServiceApp,
  type RulesServiceOptions,
} from '@floodgate/rules-service'
import { DATABASE_URL, TOKENS, dropSchema, postgresAvailable, uniqueSchema } from './helpers.js'

// One suite, two storages: the same SQL and the same answers on embedded PGlite and on a
// PostgreSQL server.
const hasPostgres = await postgresAvailable()
/** A set's version at `revision`: the revision and a random tag that no other state shares. */
const at = (revision: number) => expect.stringMatching(new RegExp(`^${revision}-[0-9a-f]{32}$`))
const pgSchema = uniqueSchema()

interface Backend {
  name: string
  skip: boolean
  /** Service options, a second handle on the same database, and how to clean up. */
  setup(): Promise<{ options: RulesServiceOptions; probe: Db; cleanup(): Promise<void> }>
}

const backends: Backend[] = [
  {
    name: 'PGlite (in memory)',
    skip: false,
    async setup() {
      // The app gets an open Db (the `db` option); the test closes it.
      const db = await openPgliteDb()
      return { options: { db }, probe: db, cleanup: () => db.close() }
    },
  },
  {
    name: 'PostgreSQL',
    skip: !hasPostgres,
    async setup() {
      // The app opens its own pool (the `databaseUrl` option) in a schema of its own.
      const probe = await openPgDb({ databaseUrl: DATABASE_URL, schema: pgSchema })
      return {
        options: { databaseUrl: DATABASE_URL, schema: pgSchema },
        probe,
        async cleanup() {
          await probe.close()
          await dropSchema(pgSchema)
        },
      }
    },
  },
]

// Response bodies are whatever JSON the API sent; the assertions check their shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any

interface CallOptions {
  token?: string | undefined
  body?: unknown
  raw?: string
  headers?: Record<string, string>
}

for (const backend of backends) {
  describe.skipIf(backend.skip)(`rules API on ${backend.name}`, () => {
    let app: RulesServiceApp
    let probe: Db
    let cleanup: (() => Promise<void>) | undefined
    const logs: string[] = []
    let serviceCounter = 0

    beforeAll(async () => {
      const setup = await backend.setup()
      probe = setup.probe
      cleanup = setup.cleanup
      app = await createRulesService({
        ...setup.options,
        tokens: [
          { name: 'ops', role: 'admin', token: TOKENS.admin },
          { name: 'checkout-team', role: 'write', services: ['checkout'], token: TOKENS.checkout },
          { name: 'hosts', role: 'read', token: TOKENS.reader },
        ],
        bodyLimit: 4096,
        logger: { level: 'trace' },
        logStream: new Writable({
          write(chunk: Buffer, _enc, done) {
            logs.push(chunk.toString())
            done()
          },
        }),
      })
    })

    afterAll(async () => {
      await app?.close()
      await cleanup?.()
    })

    const call = async (method: string, url: string, options: CallOptions = {}) => {
      const headers: Record<string, string> = { ...options.headers }
      if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
      let payload: string | undefined
      if (options.raw !== undefined) payload = options.raw
      else if (options.body !== undefined) payload = JSON.stringify(options.body)
      if (payload !== undefined && headers['content-type'] === undefined)
        headers['content-type'] = 'application/json'
      const response = await app.inject({
        method: method as 'GET',
        url,
        headers,
        ...(payload !== undefined ? { payload } : {}),
      })
      const text = response.body
      return {
        status: response.statusCode,
        headers: response.headers,
        body: text ? (JSON.parse(text) as Record<string, Loose>) : undefined,
      }
    }

    /** A fresh service per test, so tests do not see each other's rules. */
    const newService = async (): Promise<string> => {
      const name = `svc-${++serviceCounter}`
      const res = await call('PUT', `/v1/services/${name}`, { token: TOKENS.admin })
      expect(res.status).toBe(201)
      return name
    }
    const rule = (id: string, extra: Record<string, unknown> = {}) => ({
      id,
      match: 'GET /api/**',
      limit: 10,
      window: '1m',
      ...extra,
    })

    it('creates a rule, bumps the revision and serves the set with an ETag and 304s', async () => {
      const service = await newService()
      const empty = await call('GET', `/v1/services/${service}/ruleset`, { token: TOKENS.reader })
      expect(empty.status).toBe(200)
      expect(empty.body).toEqual({ service, revision: 0, version: at(0), rules: [] })
      expect(empty.headers.etag).toBe(`"${empty.body!.version}"`)

      const created = await call('POST', `/v1/services/${service}/rules`, {
        token: TOKENS.admin,
        body: rule('api'),
      })
      expect(created.status).toBe(201)
      expect(created.headers.etag).toBe(`"${created.body!.version}"`)
      expect(created.headers.location).toBe(`/v1/services/${service}/rules/api`)
      expect(created.body).toEqual({ service, revision: 1, version: at(1), rule: rule('api') })

      const set = await call('GET', `/v1/services/${service}/ruleset`, { token: TOKENS.reader })
      expect(set.body).toEqual({ service, revision: 1, version: at(1), rules: [rule('api')] })
      expect(set.headers.etag).toBe(created.headers.etag)

      const same = await call('GET', `/v1/services/${service}/ruleset`, {
        token: TOKENS.reader,
        headers: { 'if-none-match': set.headers.etag! },
      })
      expect(same.status).toBe(304)
      expect(same.body).toBeUndefined()
      expect(same.headers.etag).toBe(set.headers.etag)

      // An older state, and the bare revision (which alone names no state): both are stale.
      for (const tag of [empty.headers.etag!, '"1"']) {
        const stale = await call('GET', `/v1/services/${service}/ruleset`, {
          token: TOKENS.reader,
          headers: { 'if-none-match': tag },
        })
        expect(stale.status, tag).toBe(200)
      }

      const one = await call('GET', `/v1/services/${service}/rules/api`, { token: TOKENS.reader })
      expect(one.body).toEqual({ service, revision: 1, version: at(1), rule: rule('api') })
      const list = await call('GET', `/v1/services/${service}/rules`, { token: TOKENS.reader })
      expect(list.body).toEqual(set.body)
    })

    it('stores match: false (a rule for limiter.limit() only) and serves it back as false', async () => {
      const service = await newService()
      const url = `/v1/services/${service}/rules`
      const events = { id: 'ws', match: false, key: 'user', limit: 3, window: '10s' }
      const created = await call('POST', url, { token: TOKENS.admin, body: events })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      expect(created.body!.rule).toEqual(events)
      // A merge patch of another field keeps it; the set read back (from jsonb) still says false.
      const patched = await call('PATCH', `${url}/ws`, {
        token: TOKENS.admin,
        body: { limit: 4 },
        headers: { 'content-type': 'application/merge-patch+json' },
      })
      expect(patched.status, JSON.stringify(patched.body)).toBe(200)
      expect(patched.body!.rule).toEqual({ ...events, limit: 4 })
      const set = await call('GET', `/v1/services/${service}/ruleset`, { token: TOKENS.reader })
      expect(set.body!.rules).toEqual([{ ...events, limit: 4 }])
      expect(set.body!.rules[0].match).toBe(false)
      // An HTTP rule can become one, and back.
      await call('POST', url, { token: TOKENS.admin, body: rule('api') })
      const toEvents = await call('PATCH', `${url}/api`, {
        token: TOKENS.admin,
        body: { match: false },
        headers: { 'content-type': 'application/merge-patch+json' },
      })
      expect(toEvents.body!.rule).toEqual({ ...rule('api'), match: false })
      const back = await call('PUT', `${url}/api`, { token: TOKENS.admin, body: rule('api') })
      expect(back.body!.rule).toEqual(rule('api'))
      // true is not a spelling of it, and the error says what match may be.
      const bad = await call('POST', url, { token: TOKENS.admin, body: rule('t', { match: true }) })
      expect(bad.status).toBe(400)
      expect(bad.body!.errors).toEqual([
        expect.stringMatching(/^rules\[\d\]\.match: expected .*or false \(no HTTP request/),
      ])
      const spec = await call('GET', '/openapi.json')
      expect(spec.body!.components.schemas.Rule.properties.match.anyOf).toContainEqual(
        expect.objectContaining({ const: false }),
      )
    })

    it('refuses an invalid rule with the field path and stores nothing', async () => {
      const service = await newService()
      const bad = await call('POST', `/v1/services/${service}/rules`, {
        token: TOKENS.admin,
        body: rule('api', { limit: -1 }),
      })
      expect(bad.status).toBe(400)
      expect(bad.headers['content-type']).toMatch(/^application\/problem\+json/)
      expect(bad.body).toMatchObject({ status: 400, title: 'Invalid rules' })
      expect(bad.body!.errors).toContain('rules[0].limit: expected a positive integer, got -1')
      expect(bad.body!.detail).toContain('rules[0].limit: expected a positive integer, got -1')

      const unknownField = await call('POST', `/v1/services/${service}/rules`, {
        token: TOKENS.admin,
        body: rule('api', { limt: 5 }),
      })
      expect(unknownField.status).toBe(400)
      expect(unknownField.body!.errors.join('\n')).toMatch(
        /rules\[0\]\.limt: .*did you mean "limit"/,
      )

      const set = await call('GET', `/v1/services/${service}/ruleset`, { token: TOKENS.reader })
      expect(set.body).toEqual({ service, revision: 0, version: at(0), rules: [] })
    })

    it("manages a rule's deny and allow lists; a bad CIDR is refused naming it, the set in force stays", async () => {
      const service = await newService()
      const lists = {
        deny: { ips: ['203.0.113.0/24', '2001:db8:bad::/48'], keys: { 'header:x-api-key': ['k'] } },
        allow: { ips: ['10.0.0.0/8'] },
      }
      const created = await call('POST', `/v1/services/${service}/rules`, {
        token: TOKENS.admin,
        body: rule('api', lists),
      })
      expect(created.status).toBe(201)
      const bad = await call('POST', `/v1/services/${service}/rules`, {
        token: TOKENS.admin,
        body: rule('more', { deny: { ips: ['198.51.100.0/33'] } }),
      })
      expect(bad.status).toBe(400)
      expect(bad.body!.errors.join('\n')).toMatch(
        /^rules\[\d\]\.deny\.ips\[0\]: expected a prefix length from 0 to 32 after the '\/', got "198\.51\.100\.0\/33"$/m,
      )
      const set = await call('GET', `/v1/services/${service}/ruleset`, { token: TOKENS.reader })
      expect(set.body).toEqual({
        service,
        revision: 1,
        version: at(1),
        rules: [rule('api', lists)],
      })
    })

    it('answers malformed JSON, oversized bodies, non-JSON bodies and unknown routes with problems', async () => {
      const service = await newService()
      const url = `/v1/services/${service}/rules`
      const malformed = await call('POST', url, { token: TOKENS.admin, raw: '{"id": "a",' })
      expect(malformed.status).toBe(400)
      expect(malformed.body).toMatchObject({ title: 'Malformed JSON', status: 400 })

      const big = await call('POST', url, {
        token: TOKENS.admin,
        body: rule('a', { description: 'x'.repeat(5000) }),
      })
      expect(big.status).toBe(413)
      expect(big.body).toMatchObject({ title: 'Body too large', status: 413 })

      const text = await call('POST', url, {
        token: TOKENS.admin,
        raw: 'id=a',
        headers: { 'content-type': 'text/plain' },
      })
      expect(text.status).toBe(415)
      expect(text.body!.detail).toMatch(/application\/json/)

      const notObject = await call('POST', url, { token: TOKENS.admin, body: [rule('a')] })
      expect(notObject.status).toBe(400)

      const poisoned = await call('POST', url, {
        token: TOKENS.admin,
        raw: '{"id":"a","__proto__":{"x":1}}',
      })
      expect(poisoned.status).toBe(400)

      const route = await call('GET', '/v1/nope')
      expect(route.status).toBe(404)
      expect(route.headers['content-type']).toMatch(/^application\/problem\+json/)

      for (const path of ['ruleset', 'rules', 'rules/x', 'audit']) {
        const missing = await call('GET', `/v1/services/no-such-service/${path}`, {
          token: TOKENS.admin,
        })
        expect(missing.status, path).toBe(404)
        // The 404 names the call that creates the service.
        expect(missing.body!.detail).toBe(
          'no service named "no-such-service"; an admin token creates it with PUT /v1/services/no-such-service (or start the service with --service no-such-service)',
        )
      }
      const badName = await call('GET', '/v1/services/-bad/ruleset', { token: TOKENS.admin })
      expect(badName.status).toBe(404)
      expect(badName.body!.detail).toMatch(/^no service named "-bad", and there cannot be one/)
      const missingWrite = await call('POST', '/v1/services/no-such-service/rules', {
        token: TOKENS.admin,
        body: rule('a'),
      })
      expect(missingWrite.status).toBe(404)
      const missingRule = await call('GET', `${url}/nope`, { token: TOKENS.reader })
      expect(missingRule.status).toBe(404)
      expect(missingRule.body!.detail).toBe(`no rule "nope" in service "${service}"`)

      const set = await call('GET', `/v1/services/${service}/ruleset`, { token: TOKENS.reader })
      expect(set.body!.revision).toBe(0)
    })

    it('refuses a write that would leave the set invalid, whole', async () => {
      const service = await newService()
      const url = `/v1/services/${service}/rules`
      await call('POST', url, { token: TOKENS.admin, body: rule('a') })

      const duplicate = await call('POST', url, {
        token: TOKENS.admin,
        body: rule('a', { limit: 5 }),
      })
      expect(duplicate.status).toBe(409)

      const bulk = await call('PUT', url, {
        token: TOKENS.admin,
        body: { rules: [rule('b'), rule('b'), rule('c')] },
      })
      expect(bulk.status).toBe(400)
      expect(bulk.body!.errors.join('\n')).toMatch(/rules\[1\]\.id: duplicate id "b"/)

      const partlyBad = await call('PUT', url, {
        token: TOKENS.admin,
        body: { rules: [rule('b'), rule('c', { window: 'soon' })] },
      })
      expect(partlyBad.status).toBe(400)
      expect(partlyBad.body!.errors.join('\n')).toMatch(/rules\[1\]\.window: /)

      const extra = await call('PUT', url, {
        token: TOKENS.admin,
        body: { rules: [], force: true },
      })
      expect(extra.status).toBe(400)
      expect(extra.body!.detail).toMatch(/unknown field.*"force"/)

      const set = await call('GET', `${url}`, { token: TOKENS.reader })
      expect(set.body).toEqual({ service, revision: 1, version: at(1), rules: [rule('a')] })

      const replaced = await call('PUT', url, {
        token: TOKENS.admin,
        body: { rules: [rule('c'), rule('a')] },
      })
      expect(replaced.status).toBe(200)
      expect(replaced.body).toMatchObject({
        revision: 2,
        changed: true,
        rules: [rule('c'), rule('a')],
      })

      // A set read with GET can be sent back: its version makes the write conditional.
      const read = await call('GET', url, { token: TOKENS.reader })
      const stale = await call('PUT', url, {
        token: TOKENS.admin,
        body: { ...read.body, version: set.body!.version },
      })
      expect(stale.status).toBe(412)
      // A revision alone names no state (it starts over when the data is lost): refused, not
      // taken as a condition that could match another set, nor ignored.
      const { version: _v, ...revisionOnly } = read.body!
      const bare = await call('PUT', url, { token: TOKENS.admin, body: revisionOnly })
      expect(bare.status).toBe(400)
      expect(bare.body!.detail).toMatch(/revision alone/)
      const badVersion = await call('PUT', url, {
        token: TOKENS.admin,
        body: { ...read.body, version: 2 },
      })
      expect(badVersion.status).toBe(400)
      const wrongService = await call('PUT', url, {
        token: TOKENS.admin,
        body: { ...read.body, service: 'other' },
      })
      expect(wrongService.status).toBe(400)
      const roundTrip = await call('PUT', url, { token: TOKENS.admin, body: read.body })
      expect(roundTrip.body).toMatchObject({ revision: 2, changed: false })
      // With both, the header wins, `If-Match: *` (any version) included.
      for (const ifMatch of [read.headers.etag!, '*']) {
        const headerWins = await call('PUT', url, {
          token: TOKENS.admin,
          body: { ...read.body, version: set.body!.version },
          headers: { 'if-match': ifMatch },
        })
        expect(headerWins.status, ifMatch).toBe(200)
      }

      // The same set again changes nothing: no new revision, so pollers keep getting 304s.
      const again = await call('PUT', url, {
        token: TOKENS.admin,
        body: { rules: [rule('c'), rule('a')] },
      })
      expect(again.body).toMatchObject({ revision: 2, changed: false })
    })

    it('replaces, patches (JSON merge patch) and deletes rules', async () => {
      const service = await newService()
      const url = `/v1/services/${service}/rules`
      await call('POST', url, {
        token: TOKENS.admin,
        body: rule('a', { description: 'first', cost: 2 }),
      })

      const put = await call('PUT', `${url}/a`, {
        token: TOKENS.admin,
        body: { match: '/x', rate: '5/s' },
      })
      expect(put.status).toBe(200)
      expect(put.body).toEqual({
        service,
        revision: 2,
        version: at(2),
        rule: { id: 'a', match: '/x', rate: '5/s' },
      })

      const upsert = await call('PUT', `${url}/b`, { token: TOKENS.admin, body: rule('b') })
      expect(upsert.status).toBe(201)

      const wrongId = await call('PUT', `${url}/a`, { token: TOKENS.admin, body: rule('z') })
      expect(wrongId.status).toBe(400)
      expect(wrongId.body!.errors[0]).toMatch(/^rules\[0\]\.id: /)

      const patched = await call('PATCH', `${url}/b`, {
        token: TOKENS.admin,
        body: {
          limit: 20,
          window: null,
          rate: null,
          description: 'patched',
          onLimit: { action: 'reject', status: 503 },
        },
        headers: { 'content-type': 'application/merge-patch+json' },
      })
      expect(patched.status, JSON.stringify(patched.body)).toBe(400)
      expect(patched.body!.errors.join('\n')).toMatch(/rules\[0\]\.window: /)

      const patched2 = await call('PATCH', `${url}/b`, {
        token: TOKENS.admin,
        body: { limit: 20, description: 'patched', match: null },
        headers: { 'content-type': 'application/merge-patch+json' },
      })
      expect(patched2.status).toBe(200)
      expect(patched2.body).toEqual({
        service,
        revision: 4,
        version: at(4),
        rule: { id: 'b', limit: 20, window: '1m', description: 'patched' },
      })

      const badPatch = await call('PATCH', `${url}/b`, { token: TOKENS.admin, body: { limit: 0 } })
      expect(badPatch.status).toBe(400)
      expect(badPatch.body!.errors).toContain('rules[0].limit: expected a positive integer, got 0')

      const renamed = await call('PATCH', `${url}/b`, { token: TOKENS.admin, body: { id: 'c' } })
      expect(renamed.status).toBe(400)

      const missing = await call('PATCH', `${url}/nope`, {
        token: TOKENS.admin,
        body: { limit: 1 },
      })
      expect(missing.status).toBe(404)

      const deleted = await call('DELETE', `${url}/a`, { token: TOKENS.admin })
      expect(deleted.status).toBe(200)
      expect(deleted.body).toEqual({ service, revision: 5, version: at(5), deleted: 'a' })
      expect(deleted.headers.etag).toBe(`"${deleted.body!.version}"`)
      expect((await call('GET', `${url}/a`, { token: TOKENS.reader })).status).toBe(404)
      expect((await call('DELETE', `${url}/a`, { token: TOKENS.admin })).status).toBe(404)

      const set = await call('GET', url, { token: TOKENS.reader })
      expect(set.body).toEqual({
        service,
        revision: 5,
        version: at(5),
        rules: [{ id: 'b', limit: 20, window: '1m', description: 'patched' }],
      })
    })

    it('honours If-Match: 412 when someone changed the set first', async () => {
      const service = await newService()
      const url = `/v1/services/${service}/rules`
      const v0 = (await call('GET', url, { token: TOKENS.reader })).headers.etag!
      const first = await call('POST', url, {
        token: TOKENS.admin,
        body: rule('a'),
        headers: { 'if-match': v0 },
      })
      expect(first.status).toBe(201)
      const v1 = first.headers.etag!

      const stale = await call('POST', url, {
        token: TOKENS.admin,
        body: rule('b'),
        headers: { 'if-match': v0 },
      })
      expect(stale.status).toBe(412)
      expect(stale.body).toMatchObject({ status: 412, revision: 1, version: v1.slice(1, -1) })
      // The bare revision names no state: never a match.
      const bare = await call('POST', url, {
        token: TOKENS.admin,
        body: rule('b'),
        headers: { 'if-match': '"1"' },
      })
      expect(bare.status).toBe(412)
      for (const [method, path] of [
        ['PUT', `${url}/a`],
        ['PATCH', `${url}/a`],
        ['DELETE', `${url}/a`],
      ] as const) {
        const res = await call(method, path, {
          token: TOKENS.admin,
          ...(method === 'DELETE' ? {} : { body: method === 'PUT' ? rule('a') : { limit: 3 } }),
          headers: { 'if-match': v0 },
        })
        expect(res.status, method).toBe(412)
      }
      const weak = await call('DELETE', `${url}/a`, {
        token: TOKENS.admin,
        headers: { 'if-match': `W/${v1}` },
      })
      expect(weak.status).toBe(412)

      // Two writers racing from the same revision: exactly one wins.
      const race = await Promise.all(
        ['x', 'y'].map((id) =>
          call('POST', url, {
            token: TOKENS.admin,
            body: rule(id),
            headers: { 'if-match': v1 },
          }),
        ),
      )
      expect(race.map((r) => r.status).sort()).toEqual([201, 412])

      const star = await call('PATCH', `${url}/a`, {
        token: TOKENS.admin,
        body: { limit: 3 },
        headers: { 'if-match': '*' },
      })
      expect(star.status).toBe(200)
      const current = await call('PATCH', `${url}/a`, {
        token: TOKENS.admin,
        body: { limit: 4 },
        headers: { 'if-match': `"0-x", ${star.headers.etag!}` },
      })
      expect(current.status).toBe(200)
      expect(current.body!.revision).toBe(4)
    })

    it('needs tokens: write per service or admin, reads with the read token', async () => {
      const other = await newService()
      const url = '/v1/services/checkout/rules'
      const none = await call('POST', url, { body: rule('a') })
      expect(none.status).toBe(401)
      expect(none.headers['www-authenticate']).toMatch(/^Bearer/)
      expect(
        (await call('POST', url, { token: 'not-a-token-at-all-0000', body: rule('a') })).status,
      ).toBe(401)
      expect((await call('POST', url, { token: TOKENS.reader, body: rule('a') })).status).toBe(403)
      expect(
        (
          await call('POST', `/v1/services/${other}/rules`, {
            token: TOKENS.checkout,
            body: rule('a'),
          })
        ).status,
      ).toBe(403)
      expect((await call('PUT', '/v1/services/brand-new', { token: TOKENS.checkout })).status).toBe(
        403,
      )

      const ok = await call('POST', url, { token: TOKENS.checkout, body: rule('a') })
      expect(ok.status).toBe(201)

      expect((await call('GET', url)).status).toBe(401)
      expect((await call('GET', url, { token: 'wrong-token-0123456789' })).status).toBe(401)
      expect((await call('GET', url, { token: TOKENS.reader })).status).toBe(200)
      expect(
        (await call('GET', url, { headers: { authorization: `bearer ${TOKENS.reader}` } })).status,
      ).toBe(200)
      expect(
        (await call('GET', `/v1/services/${other}/rules`, { token: TOKENS.checkout })).status,
      ).toBe(403)

      const services = await call('GET', '/v1/services', { token: TOKENS.checkout })
      expect(services.body!.services.map((s: { name: string }) => s.name)).toEqual(['checkout'])
      const one = await call('GET', '/v1/services/checkout', { token: TOKENS.reader })
      expect(one.body).toMatchObject({ name: 'checkout', rules: 1 })
      expect(one.headers.etag).toBe(`"${one.body!.version}"`)
      expect(one.body!.version).toEqual(at(one.body!.revision))
      expect((await call('GET', '/v1/services/nope', { token: TOKENS.reader })).status).toBe(404)
      const all = await call('GET', '/v1/services', { token: TOKENS.admin })
      expect(all.body!.services.map((s: { name: string }) => s.name)).toContain(other)
    })

    it('keeps an audit trail: who, when, which rule, before and after', async () => {
      const service = await newService()
      const url = `/v1/services/${service}/rules`
      await call('POST', url, { token: TOKENS.admin, body: rule('a') })
      await call('PATCH', `${url}/a`, { token: TOKENS.admin, body: { limit: 99 } })
      await call('POST', url, { token: TOKENS.admin, body: rule('b') })
      await call('DELETE', `${url}/a`, { token: TOKENS.admin })
      await call('POST', url, { token: TOKENS.admin, body: rule('bad', { limit: -1 }) })

      const audit = await call('GET', `/v1/services/${service}/audit`, { token: TOKENS.reader })
      expect(audit.status).toBe(200)
      const entries = audit.body!.entries as Record<string, Loose>[]
      expect(entries.map((e) => [e.action, e.ruleId, e.revision, e.actor])).toEqual([
        ['delete', 'a', 4, 'ops'],
        ['create', 'b', 3, 'ops'],
        ['patch', 'a', 2, 'ops'],
        ['create', 'a', 1, 'ops'],
      ])
      expect(entries[2]).toMatchObject({ before: rule('a'), after: rule('a', { limit: 99 }) })
      expect(entries[0]).toMatchObject({ before: rule('a', { limit: 99 }), after: null })
      expect(entries[3]!.before).toBeNull()
      for (const e of entries) expect(Number.isNaN(Date.parse(e.at))).toBe(false)

      const page = await call(
        'GET',
        `/v1/services/${service}/audit?limit=2&before=${entries[1]!.id}`,
        { token: TOKENS.reader },
      )
      expect(page.body!.entries.map((e: { revision: number }) => e.revision)).toEqual([2, 1])
      const byRule = await call('GET', `/v1/services/${service}/audit?rule=b`, {
        token: TOKENS.reader,
      })
      expect(byRule.body!.entries).toHaveLength(1)
      expect(
        (await call('GET', `/v1/services/${service}/audit?limit=0`, { token: TOKENS.reader }))
          .status,
      ).toBe(400)
      expect(
        (await call('GET', `/v1/services/${service}/audit?since=1`, { token: TOKENS.reader }))
          .status,
      ).toBe(400)
    })

    it('serves OpenAPI 3.1, a health check and the admin page', async () => {
      const spec = await call('GET', '/openapi.json')
      expect(spec.status).toBe(200)
      expect(spec.body!.openapi).toBe('3.1.0')
      expect(Object.keys(spec.body!.paths)).toContain('/v1/services/{service}/ruleset')
      const ruleSchema = spec.body!.components.schemas.Rule
      expect(ruleSchema).toMatchObject({
        type: 'object',
        required: ['id'],
        additionalProperties: false,
      })
      expect(Object.keys(ruleSchema.properties)).toEqual(
        expect.arrayContaining(['id', 'match', 'limit', 'window', 'rate', 'onLimit']),
      )

      const health = await call('GET', '/healthz')
      expect(health.body).toEqual({ status: 'ok', storage: probe.kind })

      const page = await app.inject({ method: 'GET', url: '/admin/' })
      expect(page.statusCode).toBe(200)
      expect(page.headers['content-type']).toMatch(/^text\/html/)
      expect(page.headers['content-security-policy']).toContain("script-src 'self'")
      expect(page.body).toContain('<script type="module" src="/admin/admin.js">')
      const script = await app.inject({ method: 'GET', url: '/admin/admin.js' })
      expect(script.headers['content-type']).toMatch(/^text\/javascript/)
      expect((await app.inject({ method: 'GET', url: '/admin' })).statusCode).toBe(302)
      expect((await app.inject({ method: 'GET', url: '/admin/secrets.txt' })).statusCode).toBe(404)
    })

    it('applies each migration once, tracked in a table', async () => {
      expect(await migrate(probe)).toEqual([])
      const applied = await probe.query<{ id: number }>(
        'SELECT id FROM floodgate_migrations ORDER BY id',
      )
      expect(applied.map((r) => Number(r.id))).toEqual(migrations.map((m) => m.id))
      const tables = await probe.query<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name`,
      )
      expect(tables.map((t) => t.table_name)).toEqual([
        'audit',
        'floodgate_migrations',
        'rules',
        'services',
      ])
    })

    it('never logs a token, and logs each change with its actor', () => {
      const text = logs.join('')
      expect(text).toMatch(/"msg":"rules changed"/)
      expect(text).toMatch(/"actor":"checkout-team"/)
      for (const token of Object.values(TOKENS)) expect(text).not.toContain(token)
    })
  })
}
