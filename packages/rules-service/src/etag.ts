/**
 * A set's ETag names one exact state of it: its revision and the random tag the database drew
 * when that revision was written (`"7-3f0c…"`). The revision alone would not do: it starts over
 * at 0 when the data is lost (an in-memory service restarted, a database deleted and provisioned
 * again), and revision 1 of the new set is not revision 1 of the lost one. A retriever's
 * `If-None-Match` and a writer's `If-Match` both compare against it.
 */

/** One state of a service's rule set. */
export interface SetVersion {
  /** Counts the set's changes; starts at 0 and can start over when the data is lost. */
  revision: number
  /** Random, drawn anew by every write (and every new service row), so no two states share it. */
  tag: string
}

/**
 * @param version - the set's state
 * @returns the opaque version string (`<revision>-<tag>`), the ETag without its quotes
 */
export function versionOf(version: SetVersion): string {
  return `${version.revision}-${version.tag}`
}

/**
 * @param version - the set's version string ({@link versionOf})
 * @returns the strong ETag
 */
export function etagOf(version: string): string {
  return `"${version}"`
}

/** Split a list of entity tags; `*` is returned as is. */
function tags(header: string): string[] {
  return header
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t.length > 0)
}

/**
 * Does `If-None-Match` match the current state? (Weak comparison, as RFC 9110 asks.)
 *
 * @param header - the header value
 * @param version - the current version string
 * @returns true when the client's copy is current (answer 304)
 */
export function noneMatchHits(header: string | undefined, version: string): boolean {
  if (header === undefined) return false
  const list = tags(header)
  return list.includes('*') || weakHit(list, etagOf(version))
}

/** Weak comparison (RFC 9110 §8.8.3.2): `W/"x"` matches `"x"`. */
function weakHit(list: readonly string[], current: string): boolean {
  return list.some((t) => t === current || t === `W/${current}`)
}

/**
 * A write's preconditions (RFC 9110 §13.1), as its `If-Match` and `If-None-Match` headers gave
 * them: each `*` (the target exists, or does not) or the entity tags listed.
 */
export interface WriteConditions {
  /** `If-Match`: `*`, or its strong tags (a weak tag never matches, nor does a bare word). */
  readonly ifMatch?: '*' | readonly string[] | undefined
  /** `If-None-Match`: `*`, or its tags (weak comparison, so `W/"…"` counts too). */
  readonly ifNoneMatch?: '*' | readonly string[] | undefined
}

/**
 * Read a write's preconditions from its headers.
 *
 * @param ifMatch - the `If-Match` header
 * @param ifNoneMatch - the `If-None-Match` header
 * @returns the conditions; an absent header is no condition
 */
export function writeConditions(
  ifMatch: string | undefined,
  ifNoneMatch: string | undefined,
): WriteConditions {
  const list = (header: string | undefined): '*' | string[] | undefined => {
    if (header === undefined) return undefined
    const all = tags(header)
    return all.includes('*') ? '*' : all
  }
  const match = list(ifMatch)
  return {
    ifMatch:
      match === '*' || match === undefined ? match : match.filter((t) => /^"[^"]*"$/.test(t)),
    ifNoneMatch: list(ifNoneMatch),
  }
}

/**
 * Evaluate a write's preconditions as RFC 9110 §13.2.2 orders them: `If-Match` when present,
 * else `If-None-Match`. `*` asks whether the target exists (a rule for `…/rules/{id}`, the set
 * otherwise); a list of tags compares with the set's version.
 *
 * @param conditions - the write's preconditions
 * @param version - the set's current version
 * @param exists - whether the write's target exists
 * @returns why the precondition fails (for the 412's detail), or undefined when it holds
 */
export function preconditionFailure(
  conditions: WriteConditions,
  version: string,
  exists: boolean,
): string | undefined {
  const current = etagOf(version)
  const { ifMatch, ifNoneMatch } = conditions
  if (ifMatch !== undefined) {
    if (ifMatch === '*') return exists ? undefined : 'If-Match: * asks for one that exists'
    if (ifMatch.includes(current)) return undefined
    return `If-Match names ${ifMatch.join(' or ') || 'no strong entity tag'}, not the current version`
  }
  if (ifNoneMatch === undefined) return undefined
  if (ifNoneMatch === '*') {
    return exists ? 'If-None-Match: * asks for one that does not exist yet' : undefined
  }
  return weakHit(ifNoneMatch, current) ? 'If-None-Match names the current version' : undefined
}
