import type { Decision } from './decision.js'
import type { KeyBuilderFailed } from './keys/build-key.js'
import { UNMATCHED, listedRefusal } from './limiter-decide.js'
import type { DenyStatus, LimiterOptions } from './limiter-types.js'
import type { Rule } from './rules/rule.js'
import { CompiledAccessList } from './lists/access-list.js'
import { checkOneOf } from './options/checks.js'

const DENY_STATUSES: readonly DenyStatus[] = [403, 404, 429, 503]

/** What a limiter decides before any rule: its own deny and allow lists and the unmatched policy. */
export interface AccessOptions {
  readonly denyList: CompiledAccessList | undefined
  readonly allowList: CompiledAccessList | undefined
  /** The answer to a request the limiter's deny list names. */
  readonly denied: Decision
  /** The answer to a request no rule matches. */
  readonly unmatched: Decision
}

/**
 * Checks and compiles the limiter's `deny`, `allow`, `denyStatus` and `unmatched` options once,
 * at construction. `keyFailed` hears of a key builder that fails while a list is read.
 */
export function accessOptions<Req>(
  o: LimiterOptions<Req>,
  keyFailed: KeyBuilderFailed,
): AccessOptions {
  return {
    denyList: CompiledAccessList.compile('deny', o.deny, o.keys ?? {}, keyFailed),
    allowList: CompiledAccessList.compile('allow', o.allow, o.keys ?? {}, keyFailed),
    denied: listedRefusal(checkOneOf('denyStatus', o.denyStatus, 403, DENY_STATUSES), 'deny-list'),
    unmatched:
      checkOneOf('unmatched', o.unmatched, 'allow', ['allow', 'reject'] as const) === 'reject'
        ? listedRefusal(503, 'unmatched')
        : UNMATCHED,
  }
}

/** The answer to a request a rule's own deny list names. */
export function ruleDenied(status: Decision['status'], rule: Rule): Decision {
  return Object.freeze({ ...listedRefusal(status, 'deny-list'), rule })
}
