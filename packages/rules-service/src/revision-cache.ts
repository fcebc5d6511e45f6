import type { Db } from './db/db.js'
import type { SetVersion } from './etag.js'

/**
 * Every service's version (revision and tag) in memory, so a poll whose copy is current (a 304) runs no query.
 *
 * Exact only where this process sees every write: the cache is kept for PGlite, whose data one
 * process owns (the data directory's lock refuses a second one, and an in-memory database has
 * no other writer). Writes note their new revision once committed, and a revision never goes
 * down, so a read that raced a write cannot put an older one back. A PostgreSQL server may
 * have other instances writing the same tables, so there every poll asks the database.
 */
export class RevisionCache {
  readonly #versions = new Map<string, SetVersion>()

  /**
   * @param service - the service name
   * @returns its last known version, or undefined when not known (ask the database)
   */
  get(service: string): SetVersion | undefined {
    return this.#versions.get(service)
  }

  /**
   * Record a version read from, or committed to, the database. A lower revision than known is
   * ignored: it comes from a read or write that finished before the latest commit.
   *
   * @param service - the service name
   * @param version - its version
   */
  note(service: string, version: SetVersion): void {
    const known = this.#versions.get(service)
    if (known === undefined || version.revision > known.revision)
      this.#versions.set(service, version)
  }
}

// One cache per database handle: several services built on one `db` share it, so a write
// through any of them is seen by the others' polls.
const caches = new WeakMap<Db, RevisionCache>()

/**
 * The revision cache of a database, or undefined when caching would not be exact (PostgreSQL).
 *
 * @param db - the database
 * @returns the cache shared by everything using this handle
 */
export function revisionCacheFor(db: Db): RevisionCache | undefined {
  if (db.kind !== 'pglite') return undefined
  let cache = caches.get(db)
  if (cache === undefined) caches.set(db, (cache = new RevisionCache()))
  return cache
}
