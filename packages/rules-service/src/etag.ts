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
  const current = etagOf(version)
  return tags(header).some((t) => t === '*' || t === current || t === `W/${current}`)
}

/**
 * The entity tags an `If-Match` header accepts (strong comparison: weak tags never match, and
 * neither does anything that is not a quoted tag).
 *
 * @param header - the header value
 * @returns undefined when there is no condition (absent or `*`), else the strong tags
 */
export function ifMatchTags(header: string | undefined): string[] | undefined {
  if (header === undefined) return undefined
  const list = tags(header)
  if (list.includes('*')) return undefined
  return list.filter((t) => /^"[^"]*"$/.test(t))
}
