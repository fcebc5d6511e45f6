// One process per PGlite data directory. PGlite is PostgreSQL in one process with no shared
// memory between processes, so a second process opening the same files keeps its own copy of
// every page: both acknowledge writes, both hand out the same revisions, and whichever writes
// last on exit wins — the other's rules and audit entries are gone. A lock file held for the
// life of the database refuses the second process before it opens anything.
import { randomBytes } from 'node:crypto'
import {
  linkSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { FloodgateError } from '@floodgate/core'

/** The lock file's name inside the data directory. */
export const LOCK_FILE = 'floodgate.lock'

// A takeover left behind by a process that died in the middle of one (a few statements long) is
// cleared after this long.
const TAKEOVER_STALE_MS = 10_000

/** Who holds a data directory. */
export interface LockOwner {
  pid: number
  hostname: string
  /** When the holder took the lock (ISO 8601). */
  since: string
}

/** A held lock; `release()` removes the file if it is still this holder's. */
export interface DataDirLock {
  readonly path: string
  /** The lock file a dead process left, when this one replaced it. */
  readonly replacedStale: LockOwner | undefined
  release(): void
}

/** Options of {@link lockDataDir}; the defaults are this process and the real system. */
export interface LockDataDirOptions {
  pid?: number
  hostname?: string
  /** Whether a process with this id runs on this machine. */
  isAlive?: (pid: number) => boolean
  now?: () => number
}

/**
 * @param pid - a process id on this machine
 * @returns whether it runs (a process of another user counts: it exists)
 */
export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function readOwner(path: string): LockOwner | undefined {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  try {
    const data = JSON.parse(text) as Partial<LockOwner>
    if (Number.isInteger(data.pid) && typeof data.hostname === 'string') {
      return { pid: data.pid!, hostname: data.hostname, since: String(data.since ?? '') }
    }
  } catch {
    // Unreadable content is reported below like any other holder we cannot check.
  }
  return { pid: 0, hostname: '', since: '' }
}

function lockedError(dataDir: string, path: string, owner: LockOwner, why: string): FloodgateError {
  return new FloodgateError(
    'FG_ERR_DATA_DIR_LOCKED',
    `dataDir ${JSON.stringify(dataDir)}: ${why}. One process owns a PGlite data directory; ` +
      `stop the other process, give this one its own directory, or share a PostgreSQL server ` +
      `(databaseUrl) between several. If no process uses it, delete ${path} (it holds ${JSON.stringify(owner)})`,
  )
}

/**
 * Take the data directory's lock (creating the directory), or throw `FG_ERR_DATA_DIR_LOCKED`
 * while another live process holds it. A lock whose process is gone (it crashed or was killed)
 * is replaced; one written on another machine (a shared disk) cannot be checked and is refused.
 *
 * @param dataDir - the PGlite data directory
 * @param options - the identity and process probe (tests inject them)
 * @returns the held lock
 */
export function lockDataDir(dataDir: string, options: LockDataDirOptions = {}): DataDirLock {
  const pid = options.pid ?? process.pid
  const host = options.hostname ?? hostname()
  const isAlive = options.isAlive ?? processIsAlive
  const now = options.now ?? Date.now
  mkdirSync(dataDir, { recursive: true })
  const path = join(dataDir, LOCK_FILE)
  const mine: LockOwner = { pid, hostname: host, since: new Date(now()).toISOString() }
  const content = `${JSON.stringify(mine)}\n`
  // The content is written in full under a unique name, then linked into place: link fails
  // when the lock exists, so taking it is atomic and nobody ever reads half a lock file.
  const temp = `${path}.${pid}.${randomBytes(6).toString('hex')}`
  writeFileSync(temp, content, { flag: 'wx' })
  let replacedStale: LockOwner | undefined
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(temp, path)
        break
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      }
      const owner = readOwner(path)
      if (owner === undefined) continue // released in between: try again
      // pid 0: content no version of this code writes (it links only complete files), so no
      // live holder can be behind it.
      if (owner.pid > 0 && owner.hostname !== host) {
        throw lockedError(
          dataDir,
          path,
          owner,
          `locked by process ${owner.pid} on ${owner.hostname || 'an unknown machine'}, which this machine cannot check`,
        )
      }
      if (owner.pid === pid) {
        throw lockedError(dataDir, path, owner, 'this process has it open already')
      }
      if (owner.pid > 0 && isAlive(owner.pid)) {
        throw lockedError(
          dataDir,
          path,
          owner,
          `in use by process ${owner.pid} (since ${owner.since})`,
        )
      }
      if (attempt > 2) {
        throw lockedError(dataDir, path, owner, 'another process keeps taking it over')
      }
      if (replaceStale(path, temp, owner, now)) {
        replacedStale = owner
        break
      }
    }
  } finally {
    try {
      unlinkSync(temp)
    } catch {
      // Renamed into place by a takeover: nothing to remove.
    }
  }
  return {
    path,
    replacedStale,
    release() {
      // Only our own lock: after a takeover by someone else, the file is theirs.
      try {
        if (readFileSync(path, 'utf8') === content) unlinkSync(path)
      } catch {
        // Already gone.
      }
    },
  }
}

/**
 * Replace a dead process's lock with ours. Two processes that both found it dead must not both
 * replace it (the second would overwrite the first's live lock), so a takeover runs under a
 * directory that only one process can create, and re-reads the lock once inside.
 *
 * @returns true when our lock is in place; false to look again
 */
function replaceStale(path: string, temp: string, stale: LockOwner, now: () => number): boolean {
  const guard = `${path}.takeover`
  try {
    mkdirSync(guard)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    // Another process is taking over now, or died doing so long ago.
    try {
      if (now() - statSync(guard).mtimeMs > TAKEOVER_STALE_MS) rmdirSync(guard)
    } catch {
      // Gone already.
    }
    return false
  }
  try {
    const current = readOwner(path)
    if (current === undefined || JSON.stringify(current) !== JSON.stringify(stale)) return false
    renameSync(temp, path)
    return true
  } finally {
    rmdirSync(guard)
  }
}
