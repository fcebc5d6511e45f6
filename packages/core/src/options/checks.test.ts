import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { OptionsError } from '../errors.js'
import { validateAdapterOptions } from '../http/adapter-options.js'
import { createLimiter, type LimiterOptions } from '../limiter.js'

const anything = fc.anything({ withBigInt: true, withNullPrototype: true })
const notFunction = anything.filter((v) => v !== undefined && typeof v !== 'function')
const notPositiveInt = anything.filter(
  (v) => v !== undefined && !(typeof v === 'number' && Number.isInteger(v) && v >= 1),
)
const notLogger = anything.filter(
  (v) => v !== undefined && (typeof v !== 'object' || v === null || !('warn' in v)),
)

/** Every option of createLimiter, with values of a wrong type. */
const limiterCases: ReadonlyArray<[keyof LimiterOptions, fc.Arbitrary<unknown>]> = [
  ['clock', notFunction],
  ['onDecision', notFunction],
  ['logger', fc.oneof(notLogger, fc.constant({}))],
  ['timeoutMs', notPositiveInt],
  ['ipv6Subnet', fc.oneof(notPositiveInt, fc.constant(129))],
  ['failOpenLogIntervalMs', notPositiveInt],
  ['store', fc.oneof(notLogger, fc.constant({}), fc.constant({ consume: 1, refund: () => {} }))],
  [
    'keys',
    fc.oneof(
      fc.constantFrom(null, 1, 'x', true, []),
      fc.record({ user: notFunction }),
      // An async key builder answers a promise, never a key.
      fc.constantFrom(
        { user: async () => await Promise.resolve('u1') },
        { tenant: async function tenant() {} },
        { plan: async function* plan() {} },
      ),
    ),
  ],
  ['rules', fc.constantFrom(null, 1, 'x', true, {}, () => {})],
]

describe('option checks', () => {
  for (const [name, bad] of limiterCases) {
    it(`createLimiter refuses a wrong ${name} at startup, naming it`, () => {
      fc.assert(
        fc.property(bad, (value) => {
          let err: unknown
          try {
            createLimiter({ [name]: value })
          } catch (e) {
            err = e
          }
          expect(err).toBeInstanceOf(OptionsError)
          expect((err as Error).message).toContain(`${name}`)
          expect((err as Error).message).toMatch(/expected/)
        }),
        { numRuns: 50 },
      )
    })
  }

  const adapterCases: ReadonlyArray<[string, fc.Arbitrary<unknown>]> = [
    ['skip', notFunction],
    ['onLimited', notFunction],
    ['logger', fc.oneof(notLogger, fc.constant({}))],
    ['shadowHeader', anything.filter((v) => v !== undefined && typeof v !== 'boolean')],
    [
      'headers',
      anything.filter(
        (v) =>
          v !== undefined &&
          typeof v !== 'boolean' &&
          v !== 'ietf' &&
          v !== 'legacy' &&
          v !== 'both',
      ),
    ],
    [
      'cost',
      anything.filter(
        (v) =>
          v !== undefined &&
          typeof v !== 'function' &&
          !(typeof v === 'number' && v > 0 && Number.isFinite(v)),
      ),
    ],
  ]
  for (const [name, bad] of adapterCases) {
    it(`adapter options refuse a wrong ${name}, naming it`, () => {
      fc.assert(
        fc.property(bad, (value) => {
          expect(() => validateAdapterOptions({ [name]: value }, ['onLimited'], () => {})).toThrow(
            new RegExp(`options\\.${name}(\\.\\w+)?: expected`),
          )
        }),
        { numRuns: 50 },
      )
    })
  }

  it('failOpenLogIntervalMs is a limiter option the adapters pass on', () => {
    const warned: string[] = []
    validateAdapterOptions({ failOpenLogIntervalMs: 1000 }, [], (m) => warned.push(m))
    expect(warned).toEqual([])
  })
})
