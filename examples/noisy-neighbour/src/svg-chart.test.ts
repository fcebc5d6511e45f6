import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { lineChart, niceAxis } from './svg-chart.js'

describe('niceAxis', () => {
  it('covers the value in at most 5 equal round steps from 0', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.01, max: 1e6, noNaN: true }), (top) => {
        const { max, ticks } = niceAxis(top)
        expect(max).toBeGreaterThanOrEqual(top)
        expect(ticks[0]).toBe(0)
        expect(ticks[ticks.length - 1]).toBe(max)
        expect(ticks.length - 1).toBeLessThanOrEqual(5)
        const step = ticks[1]!
        // 1, 2, 2.5 or 5 times a power of ten.
        const mantissa = step / 10 ** Math.floor(Math.log10(step))
        expect([1, 2, 2.5, 5].some((m) => Math.abs(m - mantissa) < 1e-9)).toBe(true)
      }),
    )
  })

  it('gives the axes the report uses', () => {
    expect(niceAxis(24)).toEqual({ max: 30, ticks: [0, 10, 20, 30] })
    expect(niceAxis(60)).toEqual({ max: 80, ticks: [0, 20, 40, 60, 80] })
  })
})

describe('lineChart', () => {
  const chart = (points: [number, number | undefined][], step = false) =>
    lineChart({
      title: 'a <chart>',
      width: 400,
      height: 200,
      durationMs: 1000,
      y: { max: 10, ticks: [0, 10], format: String, label: 'n' },
      series: [{ name: 'line', colour: '#000', points, step }],
    })

  it('draws a series as one path, breaking it where a value is missing', () => {
    const svg = chart([
      [0, 1],
      [250, 2],
      [500, undefined],
      [750, 3],
      [1000, 4],
    ])
    const d = /data-points="(\d+)" d="([^"]*)"/.exec(svg)
    expect(d?.[1]).toBe('4')
    expect(d?.[2]?.match(/M/g)).toHaveLength(2)
    expect(d?.[2]?.match(/L/g)).toHaveLength(2)
    expect(svg).toContain('a &lt;chart&gt;')
  })

  it('draws steps for a value that changes in jumps', () => {
    const svg = chart(
      [
        [0, 1],
        [500, 2],
      ],
      true,
    )
    expect(/ d="(M[^"]*)"/.exec(svg)?.[1]).toMatch(/^M[\d.]+ [\d.]+H[\d.]+V[\d.]+$/)
  })
})
