import { describe, expect, it, vi } from 'vitest'
import { RulesValidationError } from '../errors.js'
import { createLimiter } from '../limiter.js'

// The sketch package is an optional peer: without it, a rule set with an adaptive rule is
// refused at startup, naming the package, and one without needs nothing.
vi.mock('./latency-sketch.js', () => ({
  SKETCH_PACKAGE: '@datadog/sketches-js',
  sketchFactory: () => undefined,
}))

describe('adaptive rules without @datadog/sketches-js installed', () => {
  it('refuses the rule set at startup, naming the rule and the package to install', () => {
    const make = () =>
      createLimiter({
        rules: [
          { id: 'per-ip', limit: 10, window: '1s' },
          { id: 'shed', algorithm: 'adaptive', adaptive: {} },
        ],
      })
    expect(make).toThrow(RulesValidationError)
    expect(make).toThrow(
      "rules[1].algorithm: 'adaptive' measures latency with the '@datadog/sketches-js' package, an optional peer dependency that is not installed: npm install @datadog/sketches-js",
    )
  })

  it('keeps the rules in force when an update adds one', () => {
    const limiter = createLimiter({ rules: [{ id: 'per-ip', limit: 10, window: '1s' }] })
    expect(() =>
      limiter.updateRules([{ id: 'shed', algorithm: 'adaptive', adaptive: {} }]),
    ).toThrow(/npm install @datadog\/sketches-js/)
    expect(limiter.rules.map((r) => r.id)).toEqual(['per-ip'])
  })
})
