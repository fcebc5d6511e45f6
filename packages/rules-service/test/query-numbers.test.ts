import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRulesService, type RulesServiceApp } from '@floodgate/rules-service'
import { TOKENS } from './helpers.js'

// The audit trail's `limit` and `before` were read with Number(), which also takes ' 2',
// '+2', '0x2', '2e0', '2.0' and '0b10': a page size or a cursor spelled some other way than
// decimal digits was taken as a number nobody wrote. Only decimal digits are a number here.
describe('numbers in the query string', () => {
  let app: RulesServiceApp
  beforeAll(async () => {
    app = await createRulesService({
      services: ['checkout'],
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
    })
  })
  afterAll(() => app?.close())

  const audit = (query: string) =>
    app.inject({
      url: `/v1/services/checkout/audit?${query}`,
      headers: { authorization: `Bearer ${TOKENS.admin}` },
    })

  it('are decimal digits; any other spelling is refused naming the parameter', async () => {
    const spelled = fc
      .tuple(
        fc.integer({ min: 1, max: 500 }),
        fc.constantFrom(
          (n: number) => ` ${n}`,
          (n: number) => `${n} `,
          (n: number) => `+${n}`,
          (n: number) => `0x${n.toString(16)}`,
          (n: number) => `0b${n.toString(2)}`,
          (n: number) => `0o${n.toString(8)}`,
          (n: number) => `${n}e0`,
          (n: number) => `${n}.0`,
        ),
      )
      .map(([n, spell]) => spell(n))
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('limit', 'before'), spelled, async (name, value) => {
        const res = await audit(`${name}=${encodeURIComponent(value)}`)
        expect(res.statusCode, `${name}=${value}`).toBe(400)
        expect(res.json<{ detail: string }>().detail).toMatch(
          new RegExp(`^${name}: expected an integer`),
        )
      }),
      { numRuns: 100 },
    )
    expect((await audit('limit=20&before=3')).statusCode).toBe(200)
  })
})
