// Rule bodies as JSON documents: comparing them whatever their key order, patching, diffing sets.

/** A rule as stored: the JSON its author wrote (core's `RuleInput`), with its `id`. */
export type RuleBody = Record<string, unknown> & { id: string }

/** Key order does not matter in jsonb, so compare bodies in a canonical form. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/**
 * Apply an RFC 7396 JSON merge patch: objects merge key by key, `null` deletes, everything
 * else (arrays included) replaces.
 *
 * @param target - the document
 * @param patch - the patch
 * @returns the patched document (the inputs are not modified)
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch
  const result: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {}
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === null) delete result[key]
    else result[key] = mergePatch(result[key], value)
  }
  return result
}

/** The rules a change touches: added, changed (by canonical form) or removed, by id. */
export function diffRules(
  current: readonly RuleBody[],
  next: readonly RuleBody[],
): { id: string; before: RuleBody | undefined; after: RuleBody | undefined }[] {
  const before = new Map(current.map((r) => [r.id, r]))
  const after = new Map(next.map((r) => [r.id, r]))
  const out: { id: string; before: RuleBody | undefined; after: RuleBody | undefined }[] = []
  for (const rule of next) {
    const old = before.get(rule.id)
    if (old === undefined || canonical(old) !== canonical(rule)) {
      out.push({ id: rule.id, before: old, after: rule })
    }
  }
  for (const rule of current) {
    if (!after.has(rule.id)) out.push({ id: rule.id, before: rule, after: undefined })
  }
  return out
}

/** A change of order that creating and deleting rules does not explain. */
export interface OrderChange {
  /** The ids in their order before the write. */
  before: string[]
  /** The ids in their order after it. */
  after: string[]
}

/**
 * Whether a write moved rules. Replaying a write's other entries keeps the rules that stay in
 * their order and appends new ones at the end; when the new set's order differs from that, the
 * write also reordered the set and its audit needs the new order to be replayable.
 *
 * @param current - the set before the write
 * @param next - the set after it
 * @returns the old and new order, or undefined when the order follows from the other entries
 */
export function orderChange(
  current: readonly RuleBody[],
  next: readonly RuleBody[],
): OrderChange | undefined {
  const kept = new Set(next.map((r) => r.id))
  const existed = new Set(current.map((r) => r.id))
  const replayed = [
    ...current.filter((r) => kept.has(r.id)).map((r) => r.id),
    ...next.filter((r) => !existed.has(r.id)).map((r) => r.id),
  ]
  const after = next.map((r) => r.id)
  if (replayed.every((id, i) => after[i] === id)) return undefined
  return { before: current.map((r) => r.id), after }
}
