import { OptionsError } from '../errors.js'
import { scopeLogger, stderrWarnings, type Logger } from '../logger.js'

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

/** An object whose keys must all be in `known` (a typo would otherwise be silently ignored). */
export function checkKnownKeys(name: string, v: object, known: readonly string[]): void {
  for (const key of Object.keys(v)) {
    if (!known.includes(key)) {
      throw new OptionsError(`${name}.${key}: unknown setting (known: ${known.join(', ')})`)
    }
  }
}

/** The error for options that are each fine alone but not together (`a` and `b` both given). */
export function optionsConflict(message: string): OptionsError {
  return new OptionsError(message)
}

/** The error for an option its own validator refused (`reason` says why). */
export function refusedOption(name: string, reason: string): OptionsError {
  return new OptionsError(`${name}: ${reason}`)
}

/** The error for a call the object's state does not allow (a source started twice). */
export function misuseError(message: string): OptionsError {
  return new OptionsError(message)
}

/** An optional integer from `min` to `max`; `def` when left out. */
export function checkIntInRange(
  name: string,
  v: unknown,
  def: number,
  min: number,
  max: number,
): number {
  if (v === undefined) return def
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw optionError(name, `an integer from ${min} to ${max}`, v)
  }
  return v
}

/** An optional integer from 1 to `max`; `def` when left out. */
export function checkPositiveInt(
  name: string,
  v: unknown,
  def: number,
  max: number = 2 ** 31 - 1,
): number {
  return checkIntInRange(name, v, def, 1, max)
}

/** An optional finite number from `min` to `max`; `def` when left out. */
export function checkNumberInRange(
  name: string,
  v: unknown,
  def: number,
  min: number,
  max: number,
): number {
  if (v === undefined) return def
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw optionError(name, `a number from ${min} to ${max}`, v)
  }
  return v
}

/** An optional number greater than 0 (and finite); `def` when left out. */
export function checkPositiveNumber(name: string, v: unknown, def: number): number {
  if (v === undefined) return def
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw optionError(name, 'a positive number', v)
  }
  return v
}

/** An optional value from a fixed list; `def` when left out. */
export function checkOneOf<T extends string | number | boolean>(
  name: string,
  v: unknown,
  def: T,
  values: readonly T[],
): T {
  if (v === undefined) return def
  if (!values.includes(v as T)) {
    const list = values.map((x) => (typeof x === 'string' ? `'${x}'` : String(x)))
    throw optionError(name, `${list.slice(0, -1).join(', ')} or ${list.at(-1)}`, v)
  }
  return v as T
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

/**
 * An optional object of functions: limit functions, or with `synchronous` key builders, which
 * must answer at once. An `async` key builder answers a promise, which is no key: every request
 * would pass unjudged, so it is refused here, at startup (a builder compiled to a plain function
 * that returns a promise still fails open on each request, logged).
 */
export function checkFunctionMap(name: string, v: unknown, synchronous: boolean = false): void {
  checkObject(name, v)
  if (v === undefined) return
  for (const [k, f] of Object.entries(v as Record<string, unknown>)) {
    if (typeof f !== 'function') throw optionError(`${name}.${k}`, 'a function', f)
    if (synchronous && isAsyncFunction(f)) {
      throw new OptionsError(
        `${name}.${k}: expected a synchronous function (a key builder answers the key at once), got an async function`,
      )
    }
  }
}

/** Whether `f` was declared `async` (an async function or async generator). */
function isAsyncFunction(f: unknown): boolean {
  const tag = Object.prototype.toString.call(f)
  return tag === '[object AsyncFunction]' || tag === '[object AsyncGeneratorFunction]'
}

/** Old names already warned about in this process (`owner.oldName`): each is said once. */
const renamesWarned = new Set<string>()

/**
 * The value of an option renamed in this version: given under `newName`, or under `oldName`,
 * which keeps working until the next version with a `FG_WRN_OPTION_RENAMED` warning logged once
 * per process (on stderr when no logger is given).
 *
 * @param owner - who takes the option, for the message (`createLimiter`, `RedisStore`)
 * @returns the value, and the name it was given under (for the checks' messages)
 * @throws OptionsError when both names are given
 */
export function renamedOption(
  options: object,
  oldName: string,
  newName: string,
  owner: string,
  logger: Logger | undefined,
): { readonly name: string; readonly value: unknown } {
  const o = options as Readonly<Record<string, unknown>>
  const value = o[newName]
  const old = o[oldName]
  if (old === undefined) return { name: newName, value }
  if (value !== undefined) {
    throw optionsConflict(
      `${owner}: ${oldName} and ${newName} are the same option (${oldName} is its old name); give only ${newName}`,
    )
  }
  const said = `${owner}.${oldName}`
  if (!renamesWarned.has(said)) {
    renamesWarned.add(said)
    // The logger's own check may come later: one that cannot warn is not used here, and one
    // that throws loses the line (scopeLogger) rather than the caller's options.
    const log = typeof logger?.warn === 'function' ? scopeLogger(logger) : stderrWarnings
    log.warn(
      { code: 'FG_WRN_OPTION_RENAMED', option: oldName, newName },
      `${owner}: the option ${oldName} is now called ${newName}; the old name works until the next version`,
    )
  }
  return { name: oldName, value: old }
}
