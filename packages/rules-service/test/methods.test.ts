import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRulesService, type RulesServiceApp } from '@floodgate/rules-service'
import { TOKENS } from './helpers.js'

// A path the API knows, asked with a method it does not take, answered 404 "no route", as if
// the service or rule did not exist. It is 405 with the methods the path takes in `Allow`
// (RFC 9110), and OPTIONS answers them; an unknown path stays 404.
const paths: [string, string[]][] = [
  ['/v1/services', ['GET', 'HEAD']],
  ['/v1/services/checkout', ['GET', 'HEAD', 'PUT']],
  ['/v1/services/checkout/ruleset', ['GET', 'HEAD']],
  ['/v1/services/checkout/rules', ['GET', 'HEAD', 'POST', 'PUT']],
  ['/v1/services/checkout/rules/a%20b', ['DELETE', 'GET', 'HEAD', 'PATCH', 'PUT']],
  ['/v1/services/che%63kout/audit?limit=1', ['GET', 'HEAD']],
  ['/v1/services/checkout/report', ['POST']],
  ['/v1/services/checkout/fleet', ['GET', 'HEAD']],
  ['/healthz', ['GET', 'HEAD']],
]
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const

describe('methods a path does not take', () => {
  let app: RulesServiceApp
  beforeAll(async () => {
    app = await createRulesService({
      services: ['checkout'],
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
    })
  })
  afterAll(() => app?.close())

  it('answer 405 with Allow, OPTIONS answers the methods, unknown paths stay 404', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...paths),
        fc.constantFrom(...METHODS),
        async ([url, takes], method) => {
          if (takes.includes(method)) return
          const res = await app.inject({
            method,
            url,
            headers: { authorization: `Bearer ${TOKENS.admin}` },
          })
          expect(res.statusCode, `${method} ${url}`).toBe(405)
          expect(res.headers.allow).toBe([...takes, 'OPTIONS'].join(', '))
          expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
          if (method !== 'HEAD') {
            expect(res.json<{ detail: string }>().detail).toContain(`does not take ${method}`)
          }
        },
      ),
      { numRuns: 200 },
    )
    for (const [url, takes] of paths) {
      const res = await app.inject({ method: 'OPTIONS', url })
      expect(res.statusCode, url).toBe(204)
      expect(res.headers.allow).toBe([...takes, 'OPTIONS'].join(', '))
    }
    for (const url of ['/v1/nope', '/v1/services/checkout/rules/a/b', '/v1/services/checkout/']) {
      expect((await app.inject({ method: 'DELETE', url })).statusCode, url).toBe(404)
    }
    // A route that takes the method but finds nothing stays a 404.
    expect((await app.inject({ method: 'GET', url: '/admin/nope.txt' })).statusCode).toBe(404)
  })
})
