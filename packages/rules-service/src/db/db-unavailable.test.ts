import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { isDatabaseOutage } from './db-unavailable.js'

// An outage is told by a code wherever the driver puts it: on the error, on its cause, or on one
// of an AggregateError's errors; anything else (a missing table, a constraint, a bug) is not one.
const OUTAGE_CODES = ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN']
const OUTAGE_SQLSTATES = [
  '57014',
  '57P01',
  '57P03',
  '55P03',
  '40001',
  '40P01',
  '08006',
  '53300',
  '25006',
]
const OTHER_CODES = ['42P01', '23505', '22P05', '42703', 'ERR_INVALID_ARG_TYPE', 'ENOENT']
const DRIVER_MESSAGES = [
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'Query read timeout',
]

type Wrap = 'cause' | 'aggregate' | 'none'

function wrapIn(leaf: Error, wraps: readonly Wrap[]): Error {
  let err = leaf
  for (const w of wraps) {
    if (w === 'cause') err = new Error('fetch failed', { cause: err })
    else if (w === 'aggregate') err = new AggregateError([new Error('other'), err], 'all failed')
  }
  return err
}

const wraps = fc.array(fc.constantFrom<Wrap>('cause', 'aggregate', 'none'), { maxLength: 4 })
const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code })

describe('isDatabaseOutage', () => {
  it('property: an outage code or driver message anywhere in the chain is an outage', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.constantFrom(...OUTAGE_CODES, ...OUTAGE_SQLSTATES).map((c) => withCode(c)),
          fc.constantFrom(...DRIVER_MESSAGES).map((m) => new Error(m)),
        ),
        wraps,
        (leaf, w) => {
          expect(isDatabaseOutage(wrapIn(leaf, w))).toBe(true)
        },
      ),
    )
  })

  it('property: other codes and messages are faults, not outages', () => {
    fc.assert(
      fc.property(
        fc.option(fc.constantFrom(...OTHER_CODES), { nil: undefined }),
        fc.string().filter((m) => !/^(Connection terminated|timeout exceeded|Query read)/.test(m)),
        wraps,
        (code, message, w) => {
          const leaf = code === undefined ? new Error(message) : withCode(code, message)
          expect(isDatabaseOutage(wrapIn(leaf, w))).toBe(false)
        },
      ),
    )
  })

  it('ends on a cause that cycles, and takes non-errors', () => {
    const a = new Error('a') as Error & { cause?: unknown }
    a.cause = new Error('b', { cause: a })
    expect(isDatabaseOutage(a)).toBe(false)
    for (const v of [undefined, null, 'ECONNREFUSED', 42]) expect(isDatabaseOutage(v)).toBe(false)
  })
})
