import { OptionsError } from '../errors.js'

// Named checks for options, run once at startup. Every message has the same shape:
// `<name>: expected <what>, got <value>`, so a bad option is found by its name.

/** A short, safe rendering of a value for an error message. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)
  if (typeof value === 'function') return 'a function'
  if (value === null) return 'null'
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object'
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return String(value)
  }
  return typeof value
}

/** The error for an option that is not what it should be. */
export function optionError(name: string, expected: string, got: unknown): OptionsError {
  return new OptionsError(`${name}: expected ${expected}, got ${describeValue(got)}`)
}

/** An optional function. */
export function checkFunction<T>(name: string, v: T | undefined): T | undefined {
  if (v !== undefined && typeof v !== 'function') throw optionError(name, 'a function', v)
  return v
}

/** An optional integer from 1 to `max`; `def` when left out. */
export function checkPositiveInt(name: string, v: unknown, def: number, max = 2 ** 31 - 1): number {
  if (v === undefined) return def
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > max) {
    throw optionError(name, `an integer from 1 to ${max}`, v)
  }
  return v
}

/** An optional boolean; `def` when left out. */
export function checkBoolean(name: string, v: unknown, def: boolean): boolean {
  if (v === undefined) return def
  if (typeof v !== 'boolean') throw optionError(name, 'a boolean', v)
  return v
}

/** An optional plain object (not an array, not null). */
export function checkObject(name: string, v: unknown): void {
  if (v !== undefined && (typeof v !== 'object' || v === null || Array.isArray(v))) {
    throw optionError(name, 'an object', v)
  }
}

/** An object whose listed members are all functions. */
export function checkMethods(name: string, v: unknown, methods: readonly string[]): void {
  const what = `an object with ${methods.map((m) => `${m}()`).join(', ')}`
  if (typeof v !== 'object' || v === null) throw optionError(name, what, v)
  for (const m of methods) {
    if (typeof (v as Record<string, unknown>)[m] !== 'function') {
      throw new OptionsError(
        `${name}.${m}: expected a function (${name} must be ${what}), got ${describeValue((v as Record<string, unknown>)[m])}`,
      )
    }
  }
}

/** An optional pino-compatible logger: `debug`, `info`, `warn`, `error` functions. */
export function checkLogger(name: string, v: unknown): void {
  if (v !== undefined) checkMethods(name, v, ['debug', 'info', 'warn', 'error'])
}

/** An optional object of functions (key builders). */
export function checkFunctionMap(name: string, v: unknown): void {
  checkObject(name, v)
  if (v === undefined) return
  for (const [k, f] of Object.entries(v as Record<string, unknown>)) {
    if (typeof f !== 'function') throw optionError(`${name}.${k}`, 'a function', f)
  }
}
