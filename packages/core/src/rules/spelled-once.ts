import type { Checker } from './schema-issues.js'

/**
 * Refuses a second spelling of one normalised name in an object (`X-Plan` beside `x-plan` in
 * a match's headers). Both would become one entry, and which survived would depend on the
 * order of the object's keys, which stores do not keep (PostgreSQL's jsonb sorts them): the
 * rule would mean one thing where it was written and another where it is read back.
 */
export class SpelledOnce {
  private readonly seen = new Map<string, string>()

  /**
   * @param c - where problems are recorded
   * @param what - what is expected, phrased to follow "expected"
   * @param path - the object's path from the checker's value
   */
  constructor(
    private readonly c: Checker,
    private readonly what: string,
    private readonly path: readonly PropertyKey[] = [],
  ) {}

  /**
   * @param normalised - the name as the rule keeps it
   * @param written - the name as written (the object's key)
   * @returns true the first time `normalised` is seen; otherwise records the problem
   */
  first(normalised: string, written: string): boolean {
    const before = this.seen.get(normalised)
    if (before === undefined) {
      this.seen.set(normalised, written)
      return true
    }
    this.c.expected(`${this.what} (also ${JSON.stringify(before)})`, written, [
      ...this.path,
      written,
    ])
    return false
  }
}
