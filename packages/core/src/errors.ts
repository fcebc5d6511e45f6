/**
 * Every error and warning Floodgate raises, in one table. Codes are stable and each has a
 * section in docs/error-codes.md; messages name the field and the value received.
 */
// Each code has a section in docs/error-codes.md, which @floodgate/core ships, so the link
// resolves in an installed package (node_modules/@floodgate/core/docs/error-codes.md).
const DOCS = '@floodgate/core/docs/error-codes.md'

export const errorCodes = {
  FG_ERR_RULES_INVALID: 'invalid rules',
  FG_ERR_OPTIONS_INVALID: 'invalid options',
  FG_ERR_KEY_BUILDER_UNKNOWN: 'a rule refers to a key builder that is not registered',
  FG_ERR_DURATION_INVALID: 'invalid duration',
  FG_ERR_RULES_SOURCE: 'the rules source failed',
  FG_ERR_STORE_TIMEOUT: 'the store missed its deadline',
  FG_WRN_STORE_FAILED_OPEN: 'the store failed; requests pass unjudged (fail-open)',
  FG_WRN_KEY_MISSING: 'a request had no value for a rule key',
  FG_WRN_DOUBLE_MOUNT: 'the same limiter ran twice on one request; the second mount was skipped',
  FG_WRN_COST_INVALID: 'a route cost function threw or returned an invalid cost',
  FG_ERR_STORE_ANSWER_INVALID: 'the store answered something other than one result per entry',
  FG_ERR_STORE_FULL:
    'a penalty or ban found the store full of state that is not fresh and was not recorded',
  FG_WRN_CHECK_FAILED_OPEN:
    'check() met an error outside the store (malformed request facts); the request passed unjudged',
  FG_WRN_KEY_BUILDER_FAILED:
    "a key builder threw or answered something that is not a key; the request had no value for that part and the rule's fallbackKey applied",
  FG_WRN_LIMITER_CLOSED: 'check() or limit() was called after close(); the request passed unjudged',
  FG_WRN_KOA_PROXY_LEFTMOST_IP:
    'Koa trusts X-Forwarded-For (app.proxy) with maxIpsCount 0: the client picks its own IP',
  FG_WRN_FASTIFY_TRUST_PROXY_COUNT:
    'Fastify 5 trusts no proxy when trustProxy is a number: every client behind the proxy shares one IP',
  FG_WRN_OPTION_UNKNOWN: 'an unknown option was ignored',
  FG_WRN_OPTION_RENAMED:
    'an option was given under its old name, which still works for one version',
  FG_ERR_DATA_DIR_LOCKED: 'another process has the rules service data directory open',
  FG_WRN_BAN_NOT_RECORDED:
    'a refusal of a rule with a ban could not be counted, or the ban it earned could not be started',
  FG_WRN_FORWARDED_UNTRUSTED:
    'a request carried X-Forwarded-For but the app trusts no proxy: every client behind the proxy shares its address',
  FG_WRN_TRUST_PROXY_ALL:
    'the app trusts every proxy: a client can write its own address into X-Forwarded-For',
  FG_WRN_LIMIT_INVALID:
    "a limit function threw, timed out or answered something that is not a limit; the rule's own limit applied",
  FG_WRN_LIMIT_NOT_RECORDED:
    "a shared store did not record a limit function's answer; other hosts' reset and get may miss its state",
  FG_WRN_OUTCOME_INVALID:
    'requestWasSuccessful threw or answered something other than a boolean; the request counted as failed',
  FG_WRN_REDIS_CLIENT_UNSAFE:
    'the ioredis client passed to a Redis store queues or resends commands when Redis goes away',
  FG_WRN_REDIS_READY_CHECK_REFUSED:
    "Redis refused the INFO of ioredis's ready check; the store's own client connects without it",
  FG_WRN_REPORT_REFUSED: "the rules service refused this host's report; the host polls without it",
  FG_WRN_SKIP_INVALID: "the adapter's skip threw; the request was checked",
  FG_WRN_STORE_RECORD_MALFORMED:
    "a shared store's record of limit function answers held something else; read as none",
  FG_WRN_STORE_REFUND_FAILED:
    'the store failed to give back what a request held (a concurrency slot, a reservation, units counted by outcome)',
} as const

/** A Floodgate error or warning code. */
export type ErrorCode = keyof typeof errorCodes

/** Base class of Floodgate's errors: `code` is stable, `message` names what is wrong. */
export class FloodgateError extends Error {
  readonly code: ErrorCode

  constructor(code: ErrorCode, message: string, options?: ErrorOptions) {
    super(`${message} (${code}, see ${DOCS}#${code.toLowerCase()})`, options)
    this.name = 'FloodgateError'
    this.code = code
  }
}

/** A rule set that failed validation; `issues` lists every problem as `path: message`. */
export class RulesValidationError extends FloodgateError {
  readonly issues: readonly string[]

  constructor(issues: readonly string[]) {
    super('FG_ERR_RULES_INVALID', issues.join('; '))
    this.name = 'RulesValidationError'
    this.issues = issues
  }
}

/** Bad options passed to a factory; thrown at construction, never on a request. */
export class OptionsError extends FloodgateError {
  constructor(message: string) {
    super('FG_ERR_OPTIONS_INVALID', message)
    this.name = 'OptionsError'
  }
}

/**
 * Anything thrown or rejected with, as an Error; never throws itself. A value thrown by code
 * Floodgate calls (a store, a rules source's fetch) may be a Proxy whose `toString` or
 * prototype throws: converting it must not turn the failure being handled into a new one.
 */
export function toError(e: unknown): Error {
  try {
    if (e instanceof Error) return e
    return new Error(String(e))
  } catch {
    return new Error('a value that cannot be read as text')
  }
}
