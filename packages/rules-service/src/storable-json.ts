// What a request may carry into PostgreSQL. jsonb and text refuse U+0000 and unpaired UTF-16
// surrogates (they are not valid Unicode), and every recursive walk over a body — merge patch,
// canonical comparison, JSON.stringify, core's schema — needs a bounded depth. Checking both once,
// where a request enters, turns what would be a database error or a stack overflow deep inside
// a write into a 400 that names the field.

/**
 * Deepest nesting a request body may have. A rule is a few levels deep (a match object with
 * headers inside a set); anything much deeper is not a rule.
 */
export const MAX_JSON_DEPTH = 32

// A NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one.
// eslint-disable-next-line no-control-regex -- the NUL is exactly what must be found
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/**
 * @param value - a string from a request
 * @returns why PostgreSQL cannot store it, or undefined when it can
 */
export function unstorableReason(value: string): string | undefined {
  const match = UNSTORABLE.exec(value)
  if (match === null) return undefined
  if (match[0] === '\u0000') return 'contains U+0000 (NUL), which PostgreSQL cannot store'
  const code = match[0].charCodeAt(0).toString(16).toUpperCase()
  return `contains an unpaired UTF-16 surrogate (U+${code}), which is not valid Unicode and PostgreSQL cannot store`
}

/**
 * A JSON path step: `.name` for identifier-like keys, `["any key"]` otherwise.
 *
 * @param path - the path so far
 * @param key - an object key or an array index
 * @returns the longer path
 */
export function childPath(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`
  return IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`
}

/**
 * Find the first part of a parsed request (body, query or path parameters) that could not be
 * stored or walked safely: a string or key PostgreSQL refuses, or nesting deeper than
 * {@link MAX_JSON_DEPTH}. Iterative, so a hostile depth cannot overflow the stack here either.
 *
 * @param value - the parsed value
 * @param root - the name its path starts with (`body`, `query`, `params`)
 * @returns `path: what is wrong`, or undefined when the value is fine
 */
export function findUnstorable(value: unknown, root: string): string | undefined {
  const stack: { value: unknown; path: string; depth: number; key?: string }[] = [
    { value, path: root, depth: 0 },
  ]
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { value: current, path, depth, key } = item
    if (key !== undefined) {
      const reason = unstorableReason(key)
      if (reason !== undefined) return `${path}: the key ${reason}`
    }
    if (typeof current === 'string') {
      const reason = unstorableReason(current)
      if (reason !== undefined) return `${path}: ${reason}`
      continue
    }
    if (current === null || typeof current !== 'object') continue
    if (depth >= MAX_JSON_DEPTH) {
      return `${path}: nested deeper than ${MAX_JSON_DEPTH} levels; a rule needs only a few`
    }
    // Children are pushed last-first so the first problem reported is the first in the body.
    const entries: [string | number, unknown][] = Array.isArray(current)
      ? current.map((v, i) => [i, v])
      : Object.entries(current)
    for (let i = entries.length - 1; i >= 0; i--) {
      const [name, child] = entries[i]!
      stack.push({
        value: child,
        path: childPath(path, name),
        depth: depth + 1,
        ...(typeof name === 'string' ? { key: name } : {}),
      })
    }
  }
  return undefined
}
