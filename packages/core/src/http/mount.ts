import type { ServerResponse } from 'node:http'
import type { Limiter } from '../limiter.js'
import type { RequestOutcome } from '../limiter-types.js'
import { scopeLogger, stderrWarnings, type Logger } from '../logger.js'
import {
  validateAdapterOptions,
  type AdapterOptions,
  type ResolvedAdapterOptions,
} from './adapter-options.js'
import { ignoreSettlement, isPromiseLike } from './app-answers.js'
import { doubleCountGuard } from './double-count-guard.js'
import { resolveLimiter, type LimiterInput } from './resolve-limiter.js'
import { silentWarn, warnOnce, type WarnOnce } from './warn-once.js'

/** What one adapter mount resolves once, at startup. */
export interface Mount<Req> {
  readonly limiter: Limiter<Req>
  /** True when the mount created the limiter (and so should close it). */
  readonly owned: boolean
  readonly settings: ResolvedAdapterOptions<Req>
  /**
   * Warns once per warning for this mount: to the app's logger, else the framework's, else
   * stderr; silent under `warnings: false`.
   */
  readonly warn: WarnOnce
}

/**
 * The startup work every adapter does: scope the logger, validate the options (unknown keys
 * warn once, bad values throw), and resolve rules, a rules source or a shared limiter.
 *
 * @param rules - rule inputs, a `RulesSource`, or a shared `Limiter`
 * @param options - the adapter's options
 * @param ownKeys - option names the adapter adds to the shared ones
 * @param defaultLogger - the framework's logger, used when `options.logger` is absent
 * @returns the mount
 * @throws RulesValidationError or OptionsError naming what is wrong
 */
export function prepareMount<Req>(
  rules: LimiterInput<Req>,
  options: AdapterOptions<Req>,
  ownKeys: readonly string[],
  defaultLogger?: Logger,
): Mount<Req> {
  const given = options.logger ?? defaultLogger
  const logger = scopeLogger(given)
  // Checked (as a boolean) by validateAdapterOptions; read first so its own warnings obey it.
  const warn =
    (options as { warnings?: unknown }).warnings === false
      ? silentWarn
      : warnOnce(given === undefined ? stderrWarnings : logger)
  const validated = validateAdapterOptions(options, ownKeys, (message, code) =>
    warn(code ?? 'FG_WRN_OPTION_UNKNOWN', message),
  )
  const settings = {
    ...validated,
    skip: skipGuard(validated.skip, warn),
    outcomeOf: outcomeJudge(validated.requestWasSuccessful, warn),
  }
  // No logger anywhere: the limiter picks its own defaults (silent, its rules source on stderr).
  const { limiter, owned } = resolveLimiter(
    rules,
    options,
    given === undefined ? undefined : logger,
  )
  return { limiter, owned, settings, warn }
}

/**
 * The app's `skip`, guarded: only `true` skips. A throw, or an answer other than a boolean
 * (or `undefined`), checks the request and warns once: a skip that fails must not open a way
 * around the limits, nor answer 500. An `async` skip (express-rate-limit's may be) answers a
 * promise, which is truthy, and would otherwise skip every request.
 */
function skipGuard<Req>(
  skip: ((req: Req) => boolean) | undefined,
  warn: WarnOnce,
): ((req: Req) => boolean) | undefined {
  if (!skip) return undefined
  return (req) => {
    let answer: unknown
    try {
      answer = skip(req)
    } catch (err) {
      warn('FG_WRN_SKIP_INVALID', 'skip threw; the request was checked', { err })
      return false
    }
    if (answer === true) return true
    if (answer === false || answer === undefined) return false
    if (isPromiseLike(answer)) {
      // Nobody waits for it: a rejection must not become an unhandled one.
      ignoreSettlement(answer)
      warn(
        'FG_WRN_SKIP_INVALID',
        'skip answered a promise (skip is synchronous); the request was checked',
      )
    } else {
      warn(
        'FG_WRN_SKIP_INVALID',
        'skip answered something other than a boolean; the request was checked',
        { answer: typeof answer },
      )
    }
    return false
  }
}

/**
 * The outcome of a finished response from the app's `requestWasSuccessful`, guarded: a throw
 * or a non-boolean answer is a failure (it keeps a failure-counting rule's charge, the
 * cautious side for login protection) and warns once. A promise (an `async` function) is not
 * waited for, and its rejection is handled.
 */
function outcomeJudge<Req>(
  succeeded: ((req: Req, res: ServerResponse) => boolean) | undefined,
  warn: WarnOnce,
): ((req: Req | undefined, res: ServerResponse) => RequestOutcome) | undefined {
  if (!succeeded) return undefined
  return (req, res) => {
    let answer: unknown
    try {
      answer = succeeded(req as Req, res)
    } catch (err) {
      warn('FG_WRN_OUTCOME_INVALID', 'requestWasSuccessful threw; the request counted as failed', {
        err,
      })
      return 'failed'
    }
    if (typeof answer === 'boolean') return answer ? 'succeeded' : 'failed'
    if (isPromiseLike(answer)) {
      // Nobody waits for it: a rejection must not become an unhandled one, which ends the
      // process (the response has finished; there is nobody left to answer a 500 to).
      ignoreSettlement(answer)
      warn(
        'FG_WRN_OUTCOME_INVALID',
        'requestWasSuccessful answered a promise (it is synchronous); the request counted as failed',
      )
      return 'failed'
    }
    warn(
      'FG_WRN_OUTCOME_INVALID',
      'requestWasSuccessful answered something other than a boolean; the request counted as failed',
      { answer: typeof answer },
    )
    return 'failed'
  }
}

/**
 * For middleware adapters (Express, Koa), whose mounts can stack on one request path: a
 * function that tells whether this mount should check the request, false when the same limiter
 * already did (docs/security.md#double-counting-by-mounting), logging `FG_WRN_DOUBLE_MOUNT` once.
 *
 * @param mount - the mount
 * @param pathOf - the request's path, for the log line; read only when a second mount is found
 * @returns a function of the per-request holder (see `doubleCountGuard`) and the request
 */
export function firstCheck<Req, R>(
  mount: Mount<Req>,
  pathOf: (request: R) => string,
): (holder: object, request: R) => boolean {
  const seen = doubleCountGuard(mount.limiter)
  return (holder, request) => {
    if (!seen(holder)) return true
    mount.warn(
      'FG_WRN_DOUBLE_MOUNT',
      'one limiter is mounted twice on this request path; it charged once, at the first mount (mount heavy routes before the app-wide limiter, or give the app-wide mount a cost function)',
      // Read only here: on Express every property read of a request is a cache miss.
      { path: pathOf(request) },
    )
    return false
  }
}

/** The path of a request URL, without its query string. */
export function pathOf(url: string): string {
  const q = url.indexOf('?')
  return q < 0 ? url : url.slice(0, q)
}

/**
 * The length of an absolute-form target's `scheme://authority` (0 for an origin-form path):
 * its path starts at the first `/` after `://`, as Express's and Fastify's routers read it.
 *
 * @param url - a request target as received (`req.url`)
 * @returns where the path starts; the whole length when the target has no path
 * @example
 * originLength('http://x/login') // 8
 */
export function originLength(url: string): number {
  if (url.charCodeAt(0) === 47 /* / */) return 0
  const scheme = url.indexOf('://')
  if (scheme < 0) return 0
  const slash = url.indexOf('/', scheme + 3)
  return slash < 0 ? url.length : slash
}
