import type { AlgorithmResult } from './algorithms/algorithm.js'
import type { Decision, RuleOutcome } from './decision.js'
import { FloodgateError } from './errors.js'
import type { Entry } from './limiter-entry.js'
import { isThenable } from './limiter-deadline.js'
import type { FailOpenLog } from './limiter-fail-open-log.js'
import { BAN_CHARGE } from './rules/ban-states.js'
import type { ConsumeEntry, RefundEntry, StateEntry, Store } from './stores/store.js'

/** A request's entries plus one ban check per entry whose rule bans. */
export interface WithBanChecks {
  /** What the store decides: the request's entries, then the ban checks. */
  readonly all: readonly ConsumeEntry[]
  /** For each ban check, in order, the index of the entry it belongs to. */
  readonly owners: readonly number[]
}

/**
 * Add a check of each banning rule's block state (at cost 0, refused while the client is
 * banned) to the request's entries, so one store call decides both: a banned client is
 * refused, all-or-nothing, and charged nothing.
 *
 * @returns The entries to decide, or undefined when no rule of the request bans.
 */
export function withBanChecks(entries: readonly Entry[]): WithBanChecks | undefined {
  let owners: number[] | undefined
  for (let i = 0; i < entries.length; i++) if (entries[i]!.rule.ban) (owners ??= []).push(i)
  if (owners === undefined) return undefined
  const all: ConsumeEntry[] = entries.slice()
  for (const i of owners) {
    const e = entries[i]!
    all.push({ rule: e.rule.ban!.block, key: e.key, cost: 0, maxWaitMs: 0, shadow: false })
  }
  return { all, owners }
}

/**
 * Fold the ban checks' answers into their rules' results: a banned rule refuses, with the
 * time left in the ban as its `retryAfterMs`.
 *
 * @returns One result per request entry, and which of them are banned.
 */
export function applyBanChecks(
  results: readonly AlgorithmResult[],
  n: number,
  owners: readonly number[],
): { results: readonly AlgorithmResult[]; banned: readonly boolean[] } {
  const own = results.slice(0, n)
  const banned = new Array<boolean>(n).fill(false)
  owners.forEach((i, j) => {
    const block = results[n + j]!
    if (block.allowed) return
    const r = own[i]!
    banned[i] = true
    own[i] = {
      allowed: false,
      waitMs: 0,
      limit: r.limit,
      remaining: 0,
      resetMs: Math.max(r.resetMs, block.retryAfterMs),
      // The same request passes once both the ban and the rule itself let it.
      retryAfterMs: Math.max(block.retryAfterMs, r.allowed ? 0 : r.retryAfterMs),
    }
  })
  return { results: own, banned }
}

/**
 * Count the refusals of banning rules and start the bans they earn. Each refusal is one unit
 * of the rule's refusals state (a sliding log of `after` units over `within`); the refusal
 * that takes the last unit, or finds none, starts a ban: the block state is reset and charged
 * into one unit of debt, which lasts `for`. A refusal the store made for want of room
 * (`storeFull`) is not the rule's and is not counted; nor does a count the store had no room
 * to record start a ban.
 *
 * @returns The indexes of the entries whose rule now bans the client (synchronously with a
 * synchronous store).
 */
export function recordRefusals(
  store: Store,
  entries: readonly Entry[],
  outcomes: readonly RuleOutcome[],
  results: readonly AlgorithmResult[],
  nowMs: number,
): number[] | Promise<number[]> | undefined {
  // Read before the store call below: a synchronous store reuses its result objects.
  const counted: number[] = []
  for (let i = 0; i < entries.length; i++) {
    const o = outcomes[i]!
    if (!entries[i]!.rule.ban || o.allowed || o.banned === true) continue
    if (results[i]?.storeFull !== true) counted.push(i)
  }
  if (counted.length === 0) return undefined
  // Shadow entries are recorded each on its own: one full log must not stop another's count.
  const refusals: ConsumeEntry[] = counted.map((i) => ({
    rule: entries[i]!.rule.ban!.refusals,
    key: entries[i]!.key,
    cost: 1,
    maxWaitMs: 0,
    shadow: true,
  }))
  const startBans = (results: readonly AlgorithmResult[]): number[] | Promise<number[]> => {
    const earned = counted.filter((_, j) => {
      const r = results[j]
      return r !== undefined && r.storeFull !== true && (!r.allowed || r.remaining === 0)
    })
    if (earned.length === 0) return earned
    const blocks: StateEntry[] = earned.map((i) => ({
      rule: entries[i]!.rule.ban!.block,
      key: entries[i]!.key,
    }))
    const charged: RefundEntry[] = blocks.map((b) => ({ ...b, cost: BAN_CHARGE }))
    // Reset first: charging is not idempotent, resetting then charging is.
    const start = (reset: readonly StateEntry[]): void | Promise<void> =>
      andThen(store.reset!(reset, nowMs), () => store.penalize!(charged, nowMs))
    // A store full of state that is not fresh (MemoryStore) has no room for a new block state;
    // the client's count, complete now, gives its room to the ban. After this ban its refusals
    // count afresh.
    const counts: StateEntry[] = earned.map((i) => ({
      rule: entries[i]!.rule.ban!.refusals,
      key: entries[i]!.key,
    }))
    const retry = (err: unknown): void | Promise<void> => {
      if (!isStoreFull(err)) throw err
      return start(blocks.concat(counts))
    }
    let started: void | Promise<void>
    try {
      started = start(blocks)
    } catch (err) {
      started = retry(err)
    }
    return started === undefined
      ? earned
      : Promise.resolve(started)
          .then(undefined, retry)
          .then(() => earned)
  }
  const answer = store.consume(refusals, nowMs)
  if (!isThenable(answer)) return startBans(answer)
  return Promise.resolve(answer).then(startBans)
}

/** `next()` once `first` is done: at once when it answered synchronously. */
function andThen(
  first: void | Promise<void>,
  next: () => void | Promise<void>,
): void | Promise<void> {
  return first === undefined ? next() : Promise.resolve(first).then(next)
}

function isStoreFull(err: unknown): boolean {
  return err instanceof FloodgateError && err.code === 'FG_ERR_STORE_FULL'
}

/**
 * The decision of the refusal that started bans: it already answers as banned, with the
 * ban's length as its Retry-After.
 */
export function bannedDecision(
  decision: Decision,
  entries: readonly Entry[],
  earned: readonly number[],
): Decision {
  if (earned.length === 0) return decision
  const outcomes = decision.outcomes.slice()
  let longest = -1
  for (const i of earned) {
    const forMs = entries[i]!.rule.rule.ban!.forMs
    const o = outcomes[i]!
    outcomes[i] = {
      ...o,
      remaining: 0,
      retryAfterMs: Math.max(o.retryAfterMs, forMs),
      resetMs: Math.max(o.resetMs, forMs),
      banned: true,
    }
    if (longest < 0 || outcomes[i].retryAfterMs > outcomes[longest]!.retryAfterMs) longest = i
  }
  const main = outcomes[longest]!
  if (main.retryAfterMs <= decision.retryAfterMs) {
    return { ...decision, outcomes, banned: true }
  }
  return {
    ...decision,
    rule: main.rule,
    limit: main.limit,
    remaining: 0,
    resetMs: main.resetMs,
    retryAfterMs: main.retryAfterMs,
    outcomes,
    banned: true,
  }
}

/** Log a failure to count refusals or start a ban; the decision stands as it was. */
export function banFailed(log: FailOpenLog, err: unknown): void {
  log.warn({ err, code: 'FG_WRN_BAN_NOT_RECORDED' }, 'could not record a refusal for a ban')
}
