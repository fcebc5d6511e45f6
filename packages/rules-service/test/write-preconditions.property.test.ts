import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { adminServiceOnPostgres, postgresAvailable } from './helpers.js'

// A write's preconditions (RFC 9110 §13.1) against a reference model, over real HTTP and the
// real PostgreSQL: If-Match and If-None-Match, each absent, `*`, the current ETag (strong or
// weak), a stale one or garbage, on every write, with the rule there or not. `*` asks whether
// the target exists (the rule for …/rules/{id}, the set otherwise); a list of tags compares
// with the set's version. A failed precondition answers 412 and changes nothing; a request
// that would fail anyway (404, 409) may answer that instead, and changes nothing either.
const hasPostgres = await postgresAvailable()

type Method = 'PUT rule' | 'PATCH rule' | 'DELETE rule' | 'POST rule' | 'PUT set'
type Tag = 'absent' | '*' | 'current' | 'weak current' | 'stale' | 'garbage' | 'current, stale'

const header = (tag: Tag, current: string): string | undefined => {
  switch (tag) {
    case 'absent':
      return undefined
    case '*':
      return '*'
    case 'current':
      return current
    case 'weak current':
      return `W/${current}`
    case 'stale':
      return '"0-00000000000000000000000000000000"'
    case 'garbage':
      return 'not-a-tag'
    case 'current, stale':
      return `"1-ffff", ${current}`
  }
}

/** The model: does the precondition fail? (RFC 9110 §13.2.2: If-Match first, else If-None-Match.) */
function fails(ifMatch: Tag, ifNoneMatch: Tag, exists: boolean): boolean {
  if (ifMatch !== 'absent') {
    if (ifMatch === '*') return !exists
    // Strong comparison: a weak tag or garbage never matches.
    return !(ifMatch === 'current' || ifMatch === 'current, stale')
  }
  if (ifNoneMatch === 'absent') return false
  if (ifNoneMatch === '*') return exists
  // Weak comparison.
  return (
    ifNoneMatch === 'current' || ifNoneMatch === 'weak current' || ifNoneMatch === 'current, stale'
  )
}

describe.skipIf(!hasPostgres)('write preconditions over HTTP and PostgreSQL', () => {
  const { call } = adminServiceOnPostgres('fg_rules_precond')
  const send = (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string | undefined> = {},
  ) => call(method, path, body, undefined, headers)
  let round = 0

  it('property: a write proceeds exactly when its preconditions hold; a refused one changes nothing', async () => {
    const tags: Tag[] = [
      'absent',
      '*',
      'current',
      'weak current',
      'stale',
      'garbage',
      'current, stale',
    ]
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Method>('PUT rule', 'PATCH rule', 'DELETE rule', 'POST rule', 'PUT set'),
        fc.boolean(),
        fc.constantFrom(...tags),
        fc.constantFrom(...tags),
        async (method, present, ifMatch, ifNoneMatch) => {
          const service = `pre-${round++}`
          const rules = `/v1/services/${service}/rules`
          expect((await send('PUT', `/v1/services/${service}`)).status).toBe(201)
          const seed = [
            { id: 'keep', rate: '1/1m' },
            ...(present ? [{ id: 'x', rate: '2/1m' }] : []),
          ]
          expect((await send('PUT', rules, { rules: seed })).status).toBe(200)
          const before = await send('GET', `/v1/services/${service}/ruleset`)
          const current = before.etag!
          const conditions = {
            'if-match': header(ifMatch, current),
            'if-none-match': header(ifNoneMatch, current),
          }
          const what = `${method} (x ${present ? 'present' : 'absent'}), If-Match ${ifMatch}, If-None-Match ${ifNoneMatch}`
          const res = await (async () => {
            switch (method) {
              case 'PUT rule':
                return send('PUT', `${rules}/x`, { rate: '9/1m' }, conditions)
              case 'PATCH rule':
                return send('PATCH', `${rules}/x`, { rate: '9/1m' }, conditions)
              case 'DELETE rule':
                return send('DELETE', `${rules}/x`, undefined, conditions)
              case 'POST rule':
                return send('POST', rules, { id: 'x', rate: '9/1m' }, conditions)
              case 'PUT set':
                return send('PUT', rules, { rules: [{ id: 'x', rate: '9/1m' }] }, conditions)
            }
          })()
          // What the write answers without conditions.
          const baseline =
            method === 'PUT rule'
              ? present
                ? 200
                : 201
              : method === 'PATCH rule' || method === 'DELETE rule'
                ? present
                  ? 200
                  : 404
                : method === 'POST rule'
                  ? present
                    ? 409
                    : 201
                  : 200
          const exists =
            method === 'PUT rule' || method === 'PATCH rule' || method === 'DELETE rule'
              ? present
              : true
          const after = await send('GET', `/v1/services/${service}/ruleset`)
          if (baseline >= 400) {
            expect([baseline, 412], what).toContain(res.status)
            expect(after.etag, what).toBe(current)
          } else if (fails(ifMatch, ifNoneMatch, exists)) {
            expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(412)
            expect(res.body, what).toMatchObject({
              status: 412,
              version: JSON.parse(current) as string,
            })
            expect(after.etag, what).toBe(current)
          } else {
            expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(baseline)
            expect(after.etag, what).not.toBe(current)
          }
        },
      ),
      { numRuns: 150 },
    )
  })

  it('property: of writers racing to create one rule with If-None-Match: *, exactly one wins', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 8 }), async (writers) => {
        const service = `pre-${round++}`
        expect((await send('PUT', `/v1/services/${service}`)).status).toBe(201)
        const results = await Promise.all(
          Array.from({ length: writers }, (_, i) =>
            send(
              'PUT',
              `/v1/services/${service}/rules/x`,
              { rate: `${i + 1}/1m` },
              { 'if-none-match': '*' },
            ),
          ),
        )
        const statuses = results.map((r) => r.status).sort()
        expect(statuses).toEqual([201, ...Array.from({ length: writers - 1 }, () => 412)])
        const winner = results.find((r) => r.status === 201)!.body as { rule: { rate: string } }
        const set = await send('GET', `/v1/services/${service}/ruleset`)
        expect((set.body as { rules: unknown[] }).rules).toEqual([
          { id: 'x', rate: winner.rule.rate },
        ])
      }),
      { numRuns: 15 },
    )
  })

  // Creating a service is a write too. It used to ignore both headers: `If-Match` on a
  // service that did not exist created it, `If-None-Match: *` on one that did answered 200.
  it('property: creating a service proceeds exactly when its preconditions hold; a refused one creates nothing', async () => {
    const tags: Tag[] = [
      'absent',
      '*',
      'current',
      'weak current',
      'stale',
      'garbage',
      'current, stale',
    ]
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.constantFrom(...tags),
        fc.constantFrom(...tags),
        async (present, ifMatch, ifNoneMatch) => {
          const service = `svc-${round++}`
          const url = `/v1/services/${service}`
          if (present) expect((await send('PUT', url)).status).toBe(201)
          const before = await send('GET', url)
          // A service that does not exist has no version: any tag sent names another state.
          const current = present ? before.etag! : '"0-00000000000000000000000000000001"'
          const res = await send('PUT', url, undefined, {
            'if-match': header(ifMatch, current),
            'if-none-match': header(ifNoneMatch, current),
          })
          const what = `service ${present ? 'present' : 'absent'}, If-Match ${ifMatch}, If-None-Match ${ifNoneMatch}`
          // Without the service, If-Match fails whatever it names; If-None-Match holds.
          const refused = present ? fails(ifMatch, ifNoneMatch, true) : ifMatch !== 'absent'
          const after = await send('GET', url)
          if (refused) {
            expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(412)
            expect(after.status, what).toBe(present ? 200 : 404)
          } else {
            expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(present ? 200 : 201)
            expect(after.status, what).toBe(200)
          }
          if (present) expect(after.etag, what).toBe(before.etag)
        },
      ),
      { numRuns: 100 },
    )
  })

  it('property: of writers racing to create one service with If-None-Match: *, exactly one wins', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 8 }), async (writers) => {
        const url = `/v1/services/svc-${round++}`
        const results = await Promise.all(
          Array.from({ length: writers }, () =>
            send('PUT', url, undefined, { 'if-none-match': '*' }),
          ),
        )
        const statuses = results.map((r) => r.status).sort()
        expect(statuses).toEqual([201, ...Array.from({ length: writers - 1 }, () => 412)])
      }),
      { numRuns: 15 },
    )
  })
})
