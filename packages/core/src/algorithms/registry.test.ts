import { describe, expect, it } from 'vitest'
import type { AlgorithmName } from './algorithm.js'
import { algorithms, getAlgorithm } from './registry.js'

describe('algorithms', () => {
  it('maps every name to the algorithm of that name', () => {
    for (const [name, algorithm] of Object.entries(algorithms)) expect(algorithm.name).toBe(name)
    expect(Object.keys(algorithms).sort()).toEqual([
      'concurrency',
      'fixed-window',
      'gcra',
      'leaky-bucket',
      'sliding-window-counter',
      'sliding-window-log',
      'token-bucket',
    ])
  })

  it('getAlgorithm refuses unknown and inherited names', () => {
    expect(getAlgorithm('gcra').name).toBe('gcra')
    expect(() => getAlgorithm('nope' as AlgorithmName)).toThrow(TypeError)
    expect(() => getAlgorithm('toString' as AlgorithmName)).toThrow(TypeError)
  })

  it.each([
    ['token-bucket', true],
    ['gcra', true],
    ['fixed-window', true],
    ['sliding-window-log', false],
    ['sliding-window-counter', false],
    ['leaky-bucket', true],
    ['concurrency', false],
  ] as const)('%s canReserve = %s', (name, canReserve) => {
    expect(algorithms[name].canReserve).toBe(canReserve)
  })
})
