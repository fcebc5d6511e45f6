/**
 * ETags are the set's revision in quotes (`"7"`). One revision names one state of a
 * service's whole rule set, so a retriever's `If-None-Match` and a writer's `If-Match` both
 * compare against it.
 */

/**
 * @param revision - the set's revision
 * @returns the strong ETag
 */
export function etagOf(revision: number): string {
  return `"${revision}"`
}

/** Split a list of entity tags; `*` is returned as is. */
function tags(header: string): string[] {
  return header
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t.length > 0)
}

/**
 * Does `If-None-Match` match the current revision? (Weak comparison, as RFC 9110 asks.)
 *
 * @param header - the header value
 * @param revision - the current revision
 * @returns true when the client's copy is current (answer 304)
 */
export function noneMatchHits(header: string | undefined, revision: number): boolean {
  if (header === undefined) return false
  const current = etagOf(revision)
  return tags(header).some((t) => t === '*' || t === current || t === `W/${current}`)
}

/**
 * The revisions an `If-Match` header accepts (strong comparison: weak tags never match).
 *
 * @param header - the header value
 * @returns undefined when there is no condition (absent or `*`), else the revisions
 */
export function ifMatchRevisions(header: string | undefined): number[] | undefined {
  if (header === undefined) return undefined
  const list = tags(header)
  if (list.includes('*')) return undefined
  return list.flatMap((t) => {
    const m = /^"(\d{1,15})"$/.exec(t)
    return m?.[1] === undefined ? [] : [Number(m[1])]
  })
}
