import { formatValue } from './format-value.js'

// The problems found in a rule set, rendered as `rules[2].limit: expected a positive integer,
// got -1`, with a did-you-mean for unknown fields. The schema is checked by hand rather than
// through a validation library: the messages were always Floodgate's own, and the library
// was most of what an adapter installed.

const MAX_ISSUES = 50

/** One problem: where it is, relative to the value checked, and what is wrong. */
export interface Issue {
  readonly path: readonly PropertyKey[]
  readonly message: string
}

/** Marks a value that failed its check; its problems are already recorded. */
export const BAD: unique symbol = Symbol('bad')
export type Bad = typeof BAD

/**
 * Records the problems of one value and its parts. Every check reports through one, so the
 * whole input is checked and every problem is listed at once, not only the first.
 */
export class Checker {
  constructor(
    private readonly issues: Issue[] = [],
    private readonly base: readonly PropertyKey[] = [],
  ) {}

  /** A checker for a part of this value, recording into the same list. */
  at(...path: readonly PropertyKey[]): Checker {
    return new Checker(this.issues, [...this.base, ...path])
  }

  /** Records `path: expected <what>, got <value>`; returns {@link BAD} for the caller to pass on. */
  expected(what: string, value: unknown, path: readonly PropertyKey[] = []): Bad {
    this.issues.push({
      path: [...this.base, ...path],
      message: `expected ${what}, got ${formatValue(value)}`,
    })
    return BAD
  }

  /** Records a message said in full, without the `expected …, got …` frame. */
  say(message: string, path: readonly PropertyKey[] = []): void {
    this.issues.push({ path: [...this.base, ...path], message })
  }

  /** How many problems are recorded so far (to tell whether a part added any). */
  get count(): number {
    return this.issues.length
  }

  /** Every problem recorded, in the order found. */
  get all(): readonly Issue[] {
    return this.issues
  }
}

/** A JSON path for messages: `prefix.name[2]["odd key"]`. */
export function formatPath(prefix: string, path: readonly PropertyKey[]): string {
  let out = prefix
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`
    else if (typeof p === 'string' && /^[A-Za-z_$][\w$]*$/.test(p)) out += out ? `.${p}` : p
    else out += `[${JSON.stringify(String(p))}]`
  }
  return out
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

/** Reports a field the object's schema does not know, naming the nearest known one. */
export function unknownField(
  c: Checker,
  field: string,
  value: unknown,
  known: readonly string[],
): void {
  const near = known.find((f) => distance(f.toLowerCase(), field.toLowerCase()) <= 2)
  const hint = near ? `did you mean "${near}"?` : `one of ${known.join(', ')}`
  c.expected(`a known field (${hint})`, value, [field])
}

/** Renders problems as `prefix.path: message` lines, capped so a huge input stays readable. */
export function toMessages(issues: readonly Issue[], prefix: string): string[] {
  const out = issues.map((i) => `${formatPath(prefix, i.path)}: ${i.message}`)
  if (out.length > MAX_ISSUES) {
    const more = out.length - MAX_ISSUES
    out.length = MAX_ISSUES
    out.push(`… and ${more} more`)
  }
  return out
}
