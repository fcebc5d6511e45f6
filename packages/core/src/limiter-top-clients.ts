import { createHash, randomBytes } from 'node:crypto'
import {
  checkBoolean,
  checkIntInRange,
  checkKnownKeys,
  checkObject,
  optionError,
} from './options/checks.js'
import { printableKey } from './keys/printable-key.js'
import { SpaceSaving } from './space-saving.js'

/** Options of the per-rule summaries behind `limiter.topClients()`. */
export interface TopClientsOptions {
  /**
   * Clients tracked per rule. Memory is at most this many entries per rule in force (each an
   * entry of the key the rule counted, up to 129 characters, plus two numbers).
   * @default 64
   */
  readonly size?: number | undefined
  /**
   * Show client keys as they are (API keys, IPs) instead of a salted hash. Only for owners who
   * may see their clients' keys. A key with a backslash, a control character, U+2028, U+2029
   * or a lone surrogate is shown escaped (`\u0000ip:203.0.113.7` for a client keyed by its
   * address as the rule's fallback, `\u001f` between the parts of a composite key), so every
   * client can be printed and sent in a fleet report, and no two clients show alike.
   * @default false
   */
  readonly clearKeys?: boolean | undefined
  /**
   * Salt of the hash client keys are shown as. Set the same salt on every host to compare
   * their lists; by default each process draws its own, so hashes cannot be matched across
   * processes or restarts.
   */
  readonly salt?: string | undefined
}

/** One of the clients a rule refused most often (`limiter.topClients()`). */
export interface TopClient {
  /**
   * The client: `sha256:` and 16 hex digits of the salted key hash, or the key itself when
   * `clearKeys` is set (escaped when it holds a backslash or a character that cannot be printed).
   */
  readonly client: string
  /** Refusals counted for this client (an over-estimate by at most `error`). */
  readonly count: number
  /**
   * How much of `count` may belong to clients it displaced from the summary: the true count
   * lies between `count - error` and `count`. 0 means the count is exact.
   */
  readonly error: number
}

/** Options of `limiter.topClients()`. */
export interface TopClientsQuery {
  /**
   * How many clients to list, most refused first.
   * @default 10
   */
  readonly limit?: number | undefined
}

export const TOP_CLIENTS_DEFAULT_SIZE = 64
const MAX_SIZE = 10_000

/**
 * The clients each rule refused most often, on this host, in fixed memory: one space-saving
 * summary per rule id in force. A refusal is counted under the rule that refused (a shadow
 * rule: that would have refused), so its cost is paid only on the refusal path.
 */
export class TopClientsTracker {
  private readonly summaries = new Map<string, SpaceSaving>()
  private readonly size: number
  private readonly clearKeys: boolean
  private readonly salt: string

  /**
   * @param options - the `topClients` option
   * @param inForce - whether a rule id is in force now: a request decided under rules since
   *   replaced (in flight across the swap) must not bring back a summary `keepOnly` dropped
   */
  constructor(
    options: TopClientsOptions | undefined,
    private readonly inForce: (ruleId: string) => boolean,
  ) {
    checkObject('topClients', options)
    const o = options ?? {}
    checkKnownKeys('topClients', o, ['size', 'clearKeys', 'salt'])
    this.size = checkIntInRange('topClients.size', o.size, TOP_CLIENTS_DEFAULT_SIZE, 1, MAX_SIZE)
    this.clearKeys = checkBoolean('topClients.clearKeys', o.clearKeys, false)
    if (o.salt !== undefined && (typeof o.salt !== 'string' || o.salt === '')) {
      throw optionError('topClients.salt', 'a non-empty string', o.salt)
    }
    this.salt = o.salt ?? randomBytes(16).toString('hex')
  }

  /** Count one refusal of `key` by rule `ruleId`. */
  refused(ruleId: string, key: string): void {
    let s = this.summaries.get(ruleId)
    if (s === undefined) {
      // Asked only when a rule has no summary yet: its first refusal, or a late one of a
      // rule no longer in force, which is not counted.
      if (!this.inForce(ruleId)) return
      s = new SpaceSaving(this.size)
      this.summaries.set(ruleId, s)
    }
    s.add(key)
  }

  /** Forget the summaries of rules no longer in force, so memory follows the rules. */
  keepOnly(ruleIds: ReadonlySet<string>): void {
    for (const id of this.summaries.keys()) if (!ruleIds.has(id)) this.summaries.delete(id)
  }

  top(ruleId: unknown, query: TopClientsQuery | undefined): TopClient[] {
    if (typeof ruleId !== 'string') throw optionError('ruleId', 'a rule id (a string)', ruleId)
    checkObject('options', query)
    const q = query ?? {}
    checkKnownKeys('options', q, ['limit'])
    const limit = checkIntInRange('options.limit', q.limit, 10, 1, MAX_SIZE)
    const s = this.summaries.get(ruleId)
    if (s === undefined) return []
    return s.top(limit).map((h) => ({ client: this.show(h.key), count: h.count, error: h.error }))
  }

  private show(key: string): string {
    // Printable: a stored key can hold control characters (the IP fallback, a composite
    // key's separator, whatever a header or key builder gave), which a log line, a page or the
    // rules service (which refuses a report holding one) must not get.
    if (this.clearKeys) return printableKey(key)
    const digest = createHash('sha256').update(this.salt).update('\u0000').update(key).digest('hex')
    return `sha256:${digest.slice(0, 16)}`
  }
}
