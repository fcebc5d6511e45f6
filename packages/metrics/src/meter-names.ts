import { optionError } from '@floodgate/core/options'

/**
 * The instrument names each meter's open exporters use. A meter cannot be asked which
 * instruments it has, and two exporters making the same instrument on one meter do not fail:
 * both callbacks observe it and the meter keeps one value, so one limiter's counts are lost
 * (and a counter goes down when the other exporter closes). Names are compared as
 * OpenTelemetry does, ignoring case.
 */
export class MeterNames {
  private readonly inUse = new WeakMap<object, Set<string>>()

  /**
   * Claim `names` on `meter`; the function returned gives them back.
   * @throws OptionsError when an open exporter already uses one of them on this meter
   */
  claim(meter: object, names: readonly string[]): () => void {
    const used = this.inUse.get(meter) ?? new Set<string>()
    const keys = names.map((n) => n.toLowerCase())
    const taken = names.find((_, i) => used.has(keys[i]!))
    if (taken !== undefined) {
      throw optionError(
        'options.meter',
        `a meter without an instrument named ${taken} (give each limiter its own prefix or meter)`,
        meter,
      )
    }
    for (const key of keys) used.add(key)
    this.inUse.set(meter, used)
    return () => {
      for (const key of keys) used.delete(key)
    }
  }
}
