import { describe, expect, it } from 'vitest'
import { referenceModel } from '../testing/reference-models.js'
import { vectors } from '../testing/vectors.js'
import { runner } from './harness.test-util.js'
import { getAlgorithm } from './registry.js'

describe('shared vectors', () => {
  describe.each(vectors.map((v) => [v.name, v] as const))('%s', (_name, v) => {
    it('hold for the algorithm', () => {
      const run = runner(getAlgorithm(v.algorithm), v.params)
      for (const [i, step] of v.steps.entries()) {
        const got = run.consume(step.cost, step.atMs, step.maxWaitMs ?? 0)
        expect(got, `step ${i} at ${step.atMs} ms`).toMatchObject(step.expect)
      }
    })

    it('hold for the reference model', () => {
      const ref = referenceModel(v.algorithm).create(v.params)
      for (const [i, step] of v.steps.entries()) {
        const got = ref.consume(step.cost, step.atMs, step.maxWaitMs ?? 0)
        const expected = { ...step.expect }
        // The reference says Infinity for a request that can never pass; the algorithm gives a hint.
        if (!Number.isFinite(got.retryAfterMs)) delete expected.retryAfterMs
        expect(got, `step ${i} at ${step.atMs} ms`).toMatchObject(expected)
      }
    })
  })

  it('hold when the steps are shifted by a whole number of windows (an epoch clock)', () => {
    const shift = 1_763_776_000_000 // a multiple of 1000 ms, as in every vector above
    for (const v of vectors) {
      const run = runner(getAlgorithm(v.algorithm), v.params)
      for (const [i, step] of v.steps.entries()) {
        const got = run.consume(step.cost, step.atMs + shift, step.maxWaitMs ?? 0)
        expect(got, `${v.name}: step ${i}`).toMatchObject(step.expect)
      }
    }
  })
})
