import { createRequire } from 'node:module'

/**
 * The part of a streaming-quantile sketch a window uses. DDSketch (`@datadog/sketches-js`) is
 * the one loaded: relative-error quantiles at a fixed memory, no dependencies of its own
 * (docs/adaptive.md says why it was chosen over HdrHistogram and t-digest).
 */
export interface QuantileSketch {
  accept(value: number): void
  getValueAtQuantile(quantile: number): number
  readonly count: number
}

/** The package an adaptive rule needs, an optional peer dependency of core. */
export const SKETCH_PACKAGE = '@datadog/sketches-js'

/** Quantiles within 1% of the true value: finer than a millisecond clock at the latencies watched. */
const RELATIVE_ACCURACY = 0.01

type SketchClass = new (config: { relativeAccuracy: number }) => QuantileSketch
let sketchClass: SketchClass | null | undefined

/**
 * A factory of empty sketches, or undefined when the optional peer is not installed. Loaded
 * once, and only when a rule set has an adaptive rule: a limiter without one never loads it.
 */
export function sketchFactory(): (() => QuantileSketch) | undefined {
  if (sketchClass === undefined) {
    try {
      const mod = createRequire(import.meta.url)(SKETCH_PACKAGE) as { DDSketch?: SketchClass }
      sketchClass = typeof mod.DDSketch === 'function' ? mod.DDSketch : null
    } catch {
      sketchClass = null
    }
  }
  const Sketch = sketchClass
  return Sketch ? () => new Sketch({ relativeAccuracy: RELATIVE_ACCURACY }) : undefined
}
