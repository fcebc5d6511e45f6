import { BAD, type Bad, type Checker, unknownField } from './schema-issues.js'

/** Checks one value: its normalised form, or {@link BAD} after recording why not. */
export type Field<T> = (value: unknown, c: Checker) => T | Bad

/** What {@link checkFields} returns: each field's normalised value, `undefined` when absent. */
export type Fields<S> = { [K in keyof S]: S[K] extends Field<infer T> ? T | undefined : never }

/** A JSON-like object: not null, not an array. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** What {@link checkFields} found: the fields that passed, and the names of those that did not. */
export interface CheckedFields<S> {
  /** Each field that passed, normalised; `undefined` when absent or refused. */
  readonly fields: Fields<S>
  /** Fields present but refused: checks between fields skip what depends on them. */
  readonly failed: ReadonlySet<keyof S & string>
  /** Whether the object passed whole: every field, and no unknown one. */
  readonly ok: boolean
}

/**
 * Checks an object field by field, in the order of `shape`, then names every field the shape
 * does not know. Only own fields are read, so nothing inherited (a polluted prototype) is
 * taken for a field. Absent fields are skipped unless `required`.
 */
export function checkFields<S extends Record<string, Field<unknown>>>(
  input: Record<string, unknown>,
  shape: S,
  c: Checker,
  required: readonly (keyof S & string)[] = [],
): CheckedFields<S> {
  const before = c.count
  const fields: Record<string, unknown> = {}
  const failed = new Set<keyof S & string>()
  for (const [name, check] of Object.entries(shape) as [keyof S & string, Field<unknown>][]) {
    const value = Object.hasOwn(input, name) ? input[name] : undefined
    if (value === undefined && !required.includes(name)) continue
    const checked = check(value, c.at(name))
    if (checked === BAD) failed.add(name)
    else fields[name] = checked
  }
  const known = Object.keys(shape)
  for (const name of Object.keys(input)) {
    if (!Object.hasOwn(shape, name)) unknownField(c, name, input[name], known)
  }
  return { fields: fields as Fields<S>, failed, ok: c.count === before }
}

/** A string field; `what` completes "expected …" when it is not one. */
export const string =
  (what: string): Field<string> =>
  (value, c) =>
    typeof value === 'string' ? value : c.expected(what, value)

/** One of a fixed set of values. */
export const oneOf =
  <const T extends readonly unknown[]>(values: T, what: string): Field<T[number]> =>
  (value, c) =>
    values.includes(value) ? value : c.expected(what, value)

/** One string or a non-empty list of them, each checked by `item` at its index. */
export const stringOrList =
  (item: string, what: string): Field<string | readonly string[]> =>
  (value, c) => {
    if (typeof value === 'string') return value
    if (!Array.isArray(value)) return c.expected(what, value)
    if (value.length === 0) return c.expected(`${what} (not empty)`, value)
    const before = c.count
    value.forEach((v: unknown, i) => {
      if (typeof v !== 'string') c.expected(item, v, [i])
    })
    return c.count === before ? (value as readonly string[]) : BAD
  }
