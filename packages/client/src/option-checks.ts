// Named checks for the client's options. The package has no runtime dependencies, so it does
// not import @floodgate/core's checks; the messages keep the same shape,
// `<name>: expected <what>, got <value>`, so a bad option is found by its name.

/** A short, safe rendering of a value for an error message. */
function describeValue(value: unknown): string {
  if (typeof value === 'string') {
    return JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)
  }
  if (typeof value === 'function') return 'a function'
  if (value === null) return 'null'
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object'
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return String(value)
  }
  return typeof value
}

/** The message every option error has: `<name>: expected <what>, got <value>`. */
function optionMessage(name: string, expected: string, got: unknown): string {
  return `${name}: expected ${expected}, got ${describeValue(got)}`
}

/** A `TypeError` for a value of the wrong type. */
function optionError(name: string, expected: string, got: unknown): TypeError {
  return new TypeError(optionMessage(name, expected, got))
}

/**
 * A finite number greater than 0 (or at least `min` when `inclusive`); `def` when left out,
 * required when there is none.
 */
export function checkNumberAbove(
  name: string,
  value: unknown,
  def: number | undefined,
  min = 0,
  inclusive = false,
): number {
  const expected = `a finite number ${inclusive ? '>=' : '>'} ${min}`
  if (value === undefined && def === undefined) throw optionError(name, expected, value)
  return checkNumber(
    name,
    value,
    def!,
    expected,
    (n) => Number.isFinite(n) && (inclusive ? n >= min : n > min),
  )
}

/** An optional function; `def` when left out. */
export function checkFunction<T>(name: string, value: unknown, def: T): T {
  if (value === undefined) return def
  if (typeof value !== 'function') throw optionError(name, 'a function', value)
  return value as T
}

/** An optional plain object (not an array, not null). */
export function checkObject(name: string, value: unknown): void {
  if (
    value !== undefined &&
    (typeof value !== 'object' || value === null || Array.isArray(value))
  ) {
    throw optionError(name, 'an object', value)
  }
}

/** An optional `AbortSignal`. */
export function checkSignal(name: string, value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined
  if (typeof AbortSignal === 'undefined' || !(value instanceof AbortSignal)) {
    throw optionError(name, 'an AbortSignal', value)
  }
  return value
}

/** Throws for an option that is not part of `known`, naming the closest meaning. */
export function checkKnownKeys(name: string, value: object, known: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      throw new TypeError(
        `${name}.${key}: expected one of ${known.join(', ')}, got an unknown option`,
      )
    }
  }
}

/**
 * A number checked by `inRange` (a TypeError for anything but a number, a RangeError for a
 * number out of range); `def` when left out.
 */
function checkNumber(
  name: string,
  value: unknown,
  def: number,
  expected: string,
  inRange: (n: number) => boolean,
): number {
  if (value === undefined) return def
  if (typeof value !== 'number') throw optionError(name, expected, value)
  if (!inRange(value)) throw new RangeError(optionMessage(name, expected, value))
  return value
}

/** An optional number `>= 0`, `Infinity` included (no bound); `def` when left out. */
export function checkNonNegative(name: string, value: unknown, def: number): number {
  return checkNumber(name, value, def, 'a number >= 0', (n) => n >= 0)
}

/** An optional integer `>= 1`; `def` when left out. */
export function checkCount(name: string, value: unknown, def: number): number {
  return checkNumber(name, value, def, 'an integer >= 1', (n) => Number.isInteger(n) && n >= 1)
}

/** An optional boolean; `def` when left out. */
export function checkBoolean(name: string, value: unknown, def: boolean): boolean {
  if (value === undefined) return def
  if (typeof value !== 'boolean') throw optionError(name, 'a boolean', value)
  return value
}

/** An optional array of HTTP statuses (integers from 100 to 599); `def` when left out. */
export function checkStatuses(
  name: string,
  value: unknown,
  def: readonly number[],
): readonly number[] {
  if (value === undefined) return def
  const expected = 'an array of HTTP statuses (integers from 100 to 599)'
  if (!Array.isArray(value) || value.some((s) => typeof s !== 'number')) {
    throw optionError(name, expected, value)
  }
  const statuses = value as number[]
  if (!statuses.every((s) => Number.isInteger(s) && s >= 100 && s <= 599)) {
    throw new RangeError(optionMessage(name, expected, value))
  }
  return statuses
}

/** An optional string among `allowed`; `def` when left out. */
export function checkOneOf<T extends string>(
  name: string,
  value: unknown,
  def: T,
  allowed: readonly T[],
): T {
  if (value === undefined) return def
  const expected = allowed.map((a) => `'${a}'`).join(' or ')
  if (typeof value !== 'string') throw optionError(name, expected, value)
  if (!(allowed as readonly string[]).includes(value)) {
    throw new RangeError(optionMessage(name, expected, value))
  }
  return value as T
}
