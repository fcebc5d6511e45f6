import type { z } from 'zod'
import { formatValue } from './format-value.js'

// Zod's issues rendered as `rules[2].limit: expected a positive integer, got -1`, with a
// did-you-mean for unknown fields.

const MAX_ISSUES = 50

// Known fields per object, for "unknown field" messages.
const RULE_FIELDS = [
  'id',
  'description',
  'match',
  'key',
  'fallbackKey',
  'limit',
  'window',
  'rate',
  'algorithm',
  'burst',
  'cost',
  'onLimit',
  'shadow',
  'count',
  'tiers',
]
const TIERS_FIELDS = ['by', 'values', 'default']
const TIER_FIELDS = ['limit', 'window', 'rate', 'burst']
const MATCH_FIELDS = ['methods', 'paths', 'headers', 'hosts']
const ON_LIMIT_FIELDS = ['action', 'status', 'maxWait', 'maxQueue']

function formatPath(prefix: string, path: readonly PropertyKey[]): string {
  let out = prefix
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`
    else if (typeof p === 'string' && /^[A-Za-z_$][\w$]*$/.test(p)) out += out ? `.${p}` : p
    else out += `[${JSON.stringify(String(p))}]`
  }
  return out
}

// A union branch whose input had the wrong type altogether (as opposed to a branch that
// matched the type and failed deeper down, whose issues say more).
function isTypeMismatch(issues: readonly z.core.$ZodIssue[]): boolean {
  return issues.every(
    (i) =>
      i.path.length === 0 &&
      (i.code === 'invalid_type' ||
        i.code === 'invalid_value' ||
        (i.code === 'invalid_union' && i.errors.every(isTypeMismatch))),
  )
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1))
      prev = cur
    }
  }
  return row[b.length]!
}

function knownFields(path: readonly PropertyKey[], input: Record<string, unknown>): string[] {
  const last = path[path.length - 1]
  if (last === 'match') return MATCH_FIELDS
  if (last === 'tiers') return TIERS_FIELDS
  if (path[path.length - 2] === 'values' && path[path.length - 3] === 'tiers') return TIER_FIELDS
  if (last === 'onLimit') {
    const action = input.action
    if (action === 'reject') return ['action', 'status']
    if (action === 'queue') return ['action', 'maxWait', 'maxQueue']
    if (action === 'drop') return ['action']
    return ON_LIMIT_FIELDS
  }
  return RULE_FIELDS
}

function collectIssues(
  issues: readonly z.core.$ZodIssue[],
  base: readonly PropertyKey[],
  prefix: string,
  out: string[],
): void {
  for (const issue of issues) {
    const path = [...base, ...issue.path]
    if (issue.code === 'unrecognized_keys') {
      const input = issue.input
      const known = knownFields(path, input ?? {})
      for (const k of issue.keys) {
        const near = known.find((f) => distance(f.toLowerCase(), k.toLowerCase()) <= 2)
        const hint = near ? `did you mean "${near}"?` : `one of ${known.join(', ')}`
        const value = input && Object.hasOwn(input, k) ? input[k] : undefined
        out.push(
          `${formatPath(prefix, [...path, k])}: expected a known field (${hint}), got ${formatValue(value)}`,
        )
      }
    } else if (issue.code === 'invalid_key') {
      // A record key that failed its own check (a tier name): say what the key should be.
      const inner = issue.issues[0]
      const what = inner?.message ?? 'a valid name'
      out.push(`${formatPath(prefix, path)}: expected ${what}, got ${formatValue(path.at(-1))}`)
    } else if (
      issue.code === 'invalid_union' &&
      issue.errors.length === 0 &&
      issue.path.length > 0
    ) {
      // A discriminated union whose discriminator matched no option: show that field's value.
      const field = issue.path[issue.path.length - 1]!
      const input = issue.input as Record<PropertyKey, unknown> | undefined
      const value = input && typeof input === 'object' ? input[field] : undefined
      out.push(`${formatPath(prefix, path)}: expected ${issue.message}, got ${formatValue(value)}`)
    } else if (issue.code === 'invalid_union') {
      const specific = issue.errors.filter((branch) => !isTypeMismatch(branch))
      if (specific.length === 1) collectIssues(specific[0]!, path, prefix, out)
      else
        out.push(
          `${formatPath(prefix, path)}: expected ${issue.message}, got ${formatValue(issue.input)}`,
        )
    } else if (issue.code === 'custom' && (issue.params as { raw?: boolean } | undefined)?.raw) {
      out.push(`${formatPath(prefix, path)}: ${issue.message}`)
    } else {
      out.push(
        `${formatPath(prefix, path)}: expected ${issue.message}, got ${formatValue(issue.input)}`,
      )
    }
  }
}

/** Turns zod issues into `path: expected …, got …` lines, capped so a huge input stays readable. */
export function toMessages(error: z.ZodError, prefix: string): string[] {
  const out: string[] = []
  collectIssues(error.issues, [], prefix, out)
  if (out.length > MAX_ISSUES) {
    const more = out.length - MAX_ISSUES
    out.length = MAX_ISSUES
    out.push(`… and ${more} more`)
  }
  return out
}
