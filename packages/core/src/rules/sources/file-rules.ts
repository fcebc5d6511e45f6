import { createHash } from 'node:crypto'
import { watch, type FSWatcher } from 'node:fs'
import { readFile, readlink, realpath, stat } from 'node:fs/promises'
import type { Stats } from 'node:fs'
import { basename, dirname, extname, join, resolve } from 'node:path'
import { FloodgateError, toError } from '../../errors.js'
import { checkIntInRange, refusedOption } from '../../options/checks.js'
import { scopeLogger, type Logger } from '../../logger.js'
import type { Rule } from '../rule.js'
import { parseRulesDocument } from '../schema-document.js'
import { isInstalled } from './optional-peer.js'
import { duplicateKeyIssue } from './json-duplicate-keys.js'
import { decodeText } from './decode-text.js'
import { FailureLog, SourceRuns, type RulesSource } from './rules-source.js'

/** Options of {@link fileRules}. */
export interface FileRulesOptions {
  /**
   * Reload when the file changes: `fs.watch` on its directory (so editors that save by renaming
   * are seen) and, when the path is a symlink, on the directory of the file it points to (so a
   * Kubernetes ConfigMap's `..data` swap and a linked file saved in its own directory are seen),
   * plus a poll in case the file system sends no events. A directory replaced by another is
   * watched again from the next load on.
   * @default true
   */
  readonly watch?: boolean | undefined
  /**
   * How often to check the file's size and modification time, as a fallback to `fs.watch`
   * (network file systems, some containers). 0 turns polling off.
   * @default 5000
   */
  readonly pollIntervalMs?: number | undefined
  /**
   * Quiet time after a change event before reloading, so a save that writes in several
   * steps is read once, whole. A file that changes while it is read is not applied: it is read
   * again once it has been quiet this long. (A writer that pauses longer than this mid-file can
   * still be read half-written: write a temporary file and rename it over the rules file.)
   * @default 100
   */
  readonly debounceMs?: number | undefined
  /**
   * Where the source itself logs failures and recoveries (once each), for a source used
   * without a limiter. A limiter (and every adapter) already logs them through its own logger,
   * so passing one here too logs each twice.
   * @default silent
   */
  readonly logger?: Logger | undefined
}

/** A file rules source; `reload()` reads the file now (a SIGHUP handler can call it). */
export interface FileRulesSource extends RulesSource {
  /** Reads the file now and delivers its rules if they changed. Never rejects. */
  reload(): Promise<void>
}

/**
 * What identifies one state of the file: which file the path leads to (a rename over it or a
 * symlink swap brings another inode, whatever its size and times) and its size and times
 * (ctime moves on every write and cannot be set back, unlike mtime).
 */
const stampOf = (st: Stats): string => `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`

/**
 * Where `path` leads through its symlinks, even when the file at the end is missing (deleted
 * before being written again), so the directory it lives in stays watched meanwhile.
 */
async function targetOf(path: string): Promise<string> {
  let at = path
  // As many links as the kernel follows (ELOOP past 40).
  for (let hops = 0; hops < 40; hops++) {
    try {
      at = resolve(dirname(at), await readlink(at))
    } catch {
      break
    }
  }
  const dir = dirname(at)
  return join(await realpath(dir).catch(() => dir), basename(at))
}

const isJson = (path: string): boolean => extname(path).toLowerCase() === '.json'

async function parseText(path: string, text: string): Promise<unknown> {
  const json = isJson(path)
  try {
    if (json) {
      const data = JSON.parse(text) as unknown
      const duplicate = duplicateKeyIssue(text)
      if (duplicate !== undefined) throw new Error(`it ${duplicate}`)
      return data
    }
    // Loaded on first use: JSON users neither install nor load the YAML parser.
    const { parse } = await import('yaml')
    return parse(text) as unknown
  } catch (e) {
    throw new FloodgateError(
      'FG_ERR_RULES_SOURCE',
      `rules file ${path} is not valid ${json ? 'JSON' : 'YAML'}: ${toError(e).message}`,
      { cause: e },
    )
  }
}

/**
 * A rules source that reads a JSON (`.json`) or YAML (any other extension) file and reloads
 * it when it changes. The file holds a list of rules, or `{ revision?, rules: [...] }`.
 * Reading YAML needs the `yaml` package (an optional peer dependency: `npm install yaml`).
 * A file that cannot be read, parsed or validated leaves the previous rules in force; the
 * failure is logged and reported once, until the file changes.
 *
 * @param path - The rules file.
 * @param options - Watching, polling and logging.
 * @returns The source, to pass to `createLimiter({ rules })`.
 * @throws OptionsError on bad options, or for a YAML file when the optional `yaml` package is
 * not installed.
 * @example
 * ```ts
 * const limiter = createLimiter({ rules: fileRules('./rules.yaml'), logger })
 * ```
 */
export function fileRules(path: string, options: FileRulesOptions = {}): FileRulesSource {
  // `yaml` is an optional peer dependency. Refused here, at startup, rather than at the first
  // load, where the failure would only be logged and the limiter would run without rules.
  if (!isJson(path) && !isInstalled('yaml')) {
    throw refusedOption(
      'fileRules',
      `${path} is read as YAML (every extension but .json), which needs the 'yaml' package: npm install yaml, or write the rules as JSON in a .json file`,
    )
  }
  const watchFile = options.watch ?? true
  const pollIntervalMs = checkIntInRange(
    'fileRules: pollIntervalMs',
    options.pollIntervalMs,
    5000,
    0,
    2 ** 31 - 1,
  )
  const debounceMs = checkIntInRange(
    'fileRules: debounceMs',
    options.debounceMs,
    100,
    0,
    2 ** 31 - 1,
  )
  const logger = scopeLogger(options.logger)
  const failures = new FailureLog(logger, `file ${path}`)

  const runs = new SourceRuns()
  let onRules: (rules: Rule[], revision?: string) => void = () => {}
  let onError: (err: Error) => void = () => {}
  // The directories watched (the path's, and its target's when it is a symlink), each with the
  // identity (dev:ino) it had when watched: one replaced by another is watched again.
  const watchers = new Map<string, { readonly id: string; readonly watcher: FSWatcher }>()
  let pollTimer: NodeJS.Timeout | undefined
  let debounceTimer: NodeJS.Timeout | undefined
  // What this run has read: a new run has delivered nothing, so its first load hands over the
  // file's rules even when the file did not change.
  let lastText: string | undefined
  let lastValid = false
  let lastStamp = ''
  let loading: Promise<void> | undefined
  let again = false
  // A look at the file (stat, read if it is another) due after an event in a watched directory.
  let checkTimer: NodeJS.Timeout | undefined

  const fail = (err: Error): void => {
    if (failures.fail(err)) onError(err)
  }

  async function loadOnce(): Promise<void> {
    const mine = runs.current
    const current = (): boolean => runs.isCurrent(mine)
    let bytes: Uint8Array
    let stamp = ''
    let after = ''
    try {
      stamp = stampOf(await stat(path))
      bytes = await readFile(path)
      after = stampOf(await stat(path))
    } catch (e) {
      if (!current()) return
      lastStamp = ''
      fail(
        new FloodgateError(
          'FG_ERR_RULES_SOURCE',
          `cannot read rules file ${path}: ${toError(e).message}`,
          {
            cause: e,
          },
        ),
      )
      return
    }
    if (!current()) return
    // Written (or swapped) while it was read: what was read may be half of it. Neither applied
    // nor refused; it is read again once quiet.
    if (after !== stamp) {
      lastStamp = ''
      changed()
      return
    }
    lastStamp = stamp
    let text: string
    try {
      text = decodeText(bytes)
    } catch (e) {
      // Read again only once the file changes, like a file that does not parse.
      fail(
        new FloodgateError('FG_ERR_RULES_SOURCE', `rules file ${path} ${toError(e).message}`, {
          cause: e,
        }),
      )
      return
    }
    // The same text as last time (valid or not) has nothing new to say.
    if (text === lastText) {
      if (lastValid) failures.ok()
      return
    }
    let doc: ReturnType<typeof parseRulesDocument>
    try {
      doc = parseRulesDocument(await parseText(path, text))
    } catch (e) {
      if (!current()) return
      lastText = text
      lastValid = false
      fail(toError(e))
      return
    }
    if (!current()) return
    lastText = text
    lastValid = true
    const revision = doc.revision ?? createHash('sha256').update(text).digest('hex').slice(0, 12)
    failures.ok()
    onRules(doc.rules, revision)
  }

  // One load at a time; a change during a load triggers one more, never a pile-up.
  function reload(): Promise<void> {
    if (loading) {
      again = true
      return loading
    }
    loading = (async () => {
      const mine = runs.current
      do {
        again = false
        await loadOnce()
        if (watchFile && runs.isCurrent(mine)) await watchDirs(mine)
      } while (again && runs.going)
    })().finally(() => {
      loading = undefined
    })
    return loading
  }

  /**
   * A change to the rules file seen (an event naming it, the poll, a read that caught it
   * mid-write): read it once it has been quiet for `debounceMs`.
   */
  function changed(): void {
    if (!runs.going) return
    clearTimeout(debounceTimer)
    debounceTimer = setTimeout(() => void reload(), debounceMs)
    debounceTimer.unref()
  }

  /**
   * Something else changed in a watched directory (a ConfigMap's `..data` link, a neighbour):
   * look at the file within `debounceMs`. Not a debounce: a directory that never goes quiet (a
   * log written beside the rules) must not hold the look, or a read, back.
   */
  function looked(): void {
    if (!runs.going || checkTimer !== undefined) return
    checkTimer = setTimeout(() => {
      checkTimer = undefined
      void check()
    }, debounceMs)
    checkTimer.unref()
  }

  /** Reads the file if it is not the one last read (or could not be read then). */
  async function check(): Promise<void> {
    try {
      if (stampOf(await stat(path)) !== lastStamp) await reload()
    } catch {
      if (lastStamp !== '') await reload()
    }
  }

  async function poll(): Promise<void> {
    try {
      if (stampOf(await stat(path)) !== lastStamp) changed()
    } catch {
      if (lastStamp !== '') changed()
    }
  }

  /**
   * Watches the path's directory and, when the path is a symlink, its target's directory, each
   * for as long as it is the same directory: one removed or replaced (a ConfigMap's old stamped
   * directory, a directory renamed over) is dropped and the current one watched.
   */
  async function watchDirs(mine: number): Promise<void> {
    const wanted = new Map<string, string>()
    const target = await targetOf(path)
    for (const d of new Set([dirname(path), dirname(target)])) {
      try {
        const st = await stat(d)
        wanted.set(d, `${st.dev}:${st.ino}`)
      } catch {
        // Not there (yet): the poll, or an event in the other directory, brings it back.
      }
    }
    if (!runs.isCurrent(mine)) return
    for (const [d, w] of watchers) {
      if (wanted.get(d) === w.id) continue
      w.watcher.close()
      watchers.delete(d)
    }
    const names = new Set([basename(path), basename(target)])
    let added = false
    for (const [d, id] of wanted) {
      if (watchers.has(d)) continue
      added = true
      try {
        const watcher = watch(d, { persistent: false }, (_event, file) => {
          if (file === null || names.has(file)) changed()
          else looked()
        })
        // A watcher that breaks (directory removed) leaves the poll in charge until the next
        // load watches the directory there is now.
        watcher.on('error', () => {
          watcher.close()
          if (watchers.get(d)?.watcher === watcher) watchers.delete(d)
        })
        watchers.set(d, { id, watcher })
      } catch {
        // Not watchable here: the poll is in charge.
      }
    }
    // A change made after the load read the file but before this watch began is seen by no
    // event: look once more, after the quiet time.
    if (added) looked()
  }

  return {
    async start(rulesCallback, errorCallback, _limiter, recoveredCallback) {
      const mine = runs.begin('fileRules')
      onRules = rulesCallback
      onError = errorCallback
      lastText = undefined
      lastValid = false
      lastStamp = ''
      failures.reset()
      failures.onRecovered = recoveredCallback ?? (() => {})
      await reload()
      if (!runs.isCurrent(mine) || !watchFile) return
      if (pollIntervalMs > 0) {
        pollTimer = setInterval(() => void poll(), pollIntervalMs)
        pollTimer.unref()
      }
    },
    stop() {
      runs.end()
      for (const w of watchers.values()) w.watcher.close()
      watchers.clear()
      clearTimeout(checkTimer)
      checkTimer = undefined
      clearInterval(pollTimer)
      clearTimeout(debounceTimer)
    },
    reload,
  }
}
