import { parseRetryAfter } from '@floodgate/client'
import { FloodgateError, toError } from '../../errors.js'
import { checkIntInRange, checkNumberInRange, optionError } from '../../options/checks.js'
import { scopeLogger, type Logger } from '../../logger.js'
import type { Rule } from '../rule.js'
import { parseRulesDocument } from '../schema-document.js'
import {
  checkHostReportOptions,
  HostReporter,
  reportUrlFor,
  type HostReportOptions,
} from './host-report.js'
import { decodeText } from './decode-text.js'
import { duplicateKeyIssue } from './json-duplicate-keys.js'
import { FailureLog, SourceRuns, type RulesSource } from './rules-source.js'

// setTimeout's ceiling.
const MAX_MS = 2 ** 31 - 1

/** The answers whose `Retry-After` the poller honours: the service is busy or unavailable. */
const BUSY = new Set([429, 503])

/** Redirects the poll follows (by hand, to choose the headers each hop gets). */
const REDIRECTS = new Set([301, 302, 303, 307, 308])
/** As many redirects as fetch itself follows. */
const MAX_REDIRECTS = 20

/** Options of {@link httpRules}. */
export interface HttpRulesOptions {
  /** Time between polls. @default 10000 */
  readonly intervalMs?: number | undefined
  /**
   * Each interval is stretched or shrunk by up to this fraction at random, so a fleet that
   * started together does not poll together.
   * @default 0.1
   */
  readonly jitter?: number | undefined
  /**
   * Longest wait between two polls while the service keeps failing. After a failed poll the
   * next one waits the interval; each further failure in a row doubles the wait, up to this
   * (never below `intervalMs`; jitter applies on top). One good answer brings the interval back.
   * A 503 or 429 with `Retry-After` (seconds or an HTTP date) makes the next poll wait at least
   * that long, up to this cap: never sooner than the backoff, never later than the cap (plus
   * jitter, which only lengthens a server's ask so the fleet does not come back at once).
   * @default 300000 (5 minutes)
   */
  readonly maxBackoffMs?: number | undefined
  /**
   * Extra request headers, e.g. `{ authorization: 'Bearer …' }`. They go to the URL's origin
   * only: a redirect to another origin is followed without them (and the chain does not get
   * them back if it returns), so a token or API key never reaches a host it was not meant for.
   */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /**
   * A poll with no complete answer by then fails (and the rules in force stay), even when the
   * `fetch` given here ignores its abort signal. @default 5000
   */
  readonly timeoutMs?: number | undefined
  /** Largest body accepted. @default 5242880 (5 MiB) */
  readonly maxBytes?: number | undefined
  /**
   * Where the source itself logs failures and recoveries (once each), for a source used
   * without a limiter. A limiter (and every adapter) already logs them through its own logger,
   * so passing one here too logs each twice.
   * @default silent
   */
  readonly logger?: Logger | undefined
  /** The fetch implementation. @default globalThis.fetch */
  readonly fetch?: typeof fetch | undefined
  /**
   * Send the limiter's per-rule counters and top refused clients with each poll, so the rules
   * service can show the fleet's decisions. The poll becomes a `POST` of the report to the
   * service's `…/report` endpoint, with the same headers, answered like the poll (304 when the
   * rules are current): still one request per interval. Client keys go as the limiter shows
   * them (`topClients.clearKeys`: hashed by default). A service that refuses the report
   * (an older one, 404) is logged once (`FG_WRN_REPORT_REFUSED`) and polled without it.
   * @default false
   */
  readonly report?: boolean | HostReportOptions | undefined
}

/** An HTTP rules source; `poll()` polls now (tests, or an admin "refresh" hook). */
export interface HttpRulesSource extends RulesSource {
  /** Polls now, unless a poll is in flight (then waits for it). Never rejects. */
  poll(): Promise<void>
}

/**
 * The delay before the next poll: `intervalMs` moved by up to `jitter` of itself either way.
 *
 * @param intervalMs - The nominal interval.
 * @param jitter - The fraction, from 0 to 1.
 * @param random - A number in [0, 1), `Math.random` by default.
 * @returns Whole milliseconds, at least 1 and at most 2^31 - 1 (setTimeout's ceiling).
 */
export function jitteredDelay(
  intervalMs: number,
  jitter: number,
  random: number = Math.random(),
): number {
  // Capped at setTimeout's ceiling, past which Node waits 1 ms instead.
  return Math.min(MAX_MS, Math.max(1, Math.round(intervalMs * (1 + jitter * (2 * random - 1)))))
}

/**
 * The delay before the next poll after `failures` failed polls in a row: the interval after
 * none or one, then twice as long for each further failure, capped at `maxBackoffMs` (or the
 * interval, if larger), and jittered like {@link jitteredDelay}. A service that is down then
 * sees each host back off instead of polling at the normal rate, and the fleet's retries spread.
 *
 * @param intervalMs - The nominal interval.
 * @param maxBackoffMs - The cap on the backed-off interval.
 * @param failures - Failed polls in a row (0 after a success).
 * @param jitter - The fraction, from 0 to 1.
 * @param random - A number in [0, 1), `Math.random` by default.
 * @returns Whole milliseconds, at least 1 and at most 2^31 - 1.
 */
export function backoffDelay(
  intervalMs: number,
  maxBackoffMs: number,
  failures: number,
  jitter: number,
  random: number = Math.random(),
): number {
  const cap = Math.max(intervalMs, maxBackoffMs)
  // 2^31 already passes any cap the options accept; the exponent stays small.
  const base = Math.min(cap, intervalMs * 2 ** Math.min(31, Math.max(0, failures - 1)))
  return jitteredDelay(base, jitter, random)
}

/**
 * The delay before the next poll after a refusal that asked for `askedMs` (`Retry-After`): at
 * least the poller's own backoff, and at least the ask as far as `capMs` allows. Jitter only
 * adds to the ask (by up to `jitter` of it), so hosts told the same date spread after it
 * instead of returning together, and none returns before it.
 *
 * @param backoffMs - The poller's own delay ({@link backoffDelay}), the floor.
 * @param askedMs - What the service asked for, undefined when nothing readable.
 * @param capMs - The longest ask honoured (`maxBackoffMs`, or the interval if larger).
 * @param jitter - The fraction, from 0 to 1.
 * @param random - A number in [0, 1), `Math.random` by default.
 * @returns Whole milliseconds, at least `backoffMs` and at most 2^31 - 1.
 */
export function retryAfterDelay(
  backoffMs: number,
  askedMs: number | undefined,
  capMs: number,
  jitter: number,
  random: number = Math.random(),
): number {
  if (askedMs === undefined) return backoffMs
  const asked = Math.min(Math.ceil(askedMs), capMs)
  return Math.min(MAX_MS, Math.max(backoffMs, Math.ceil(asked * (1 + jitter * random))))
}

/**
 * `pending`, or a rejection with the signal's reason once it aborts: the poll's deadline holds
 * even when a `fetch` (the app's own, through the `fetch` option) or its body ignores the
 * signal. Without it one answer that never comes would stop the polling for good.
 */
function untilAborted<T>(pending: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      const reason: unknown = signal.reason
      reject(toError(reason))
    }
    if (signal.aborted) return onAbort()
    signal.addEventListener('abort', onAbort, { once: true })
    pending.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(toError(err))
      },
    )
  })
}

/** Reads a body, giving up (undefined) past `maxBytes` without buffering the rest. */
async function readBounded(res: Response, maxBytes: number): Promise<Buffer | undefined> {
  if (!res.body) return Buffer.alloc(0)
  const chunks: Uint8Array[] = []
  let total = 0
  // Node's web streams are async iterables; leaving the loop early cancels the stream.
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    total += chunk.byteLength
    if (total > maxBytes) return undefined
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

/**
 * How a body that failed to parse as JSON is named in the poll's error: its start, and its
 * Content-Type when that says it is something else (an HTML page from a proxy or a login
 * screen answered with 200), both quoted and cut short.
 */
function notJson(contentType: string | null, body: string): string {
  const start = JSON.stringify(body.slice(0, 40))
  if (contentType === null || /json/i.test(contentType)) return start
  return `content-type ${JSON.stringify(contentType.slice(0, 60))}: ${start}`
}

/** The `detail` of a problem+json answer, cut short; '' for anything else. */
async function readProblemDetail(res: Response): Promise<string> {
  const bytes = await readBounded(res, 4096).catch(() => undefined)
  if (bytes === undefined) return ''
  try {
    const detail: unknown = (JSON.parse(decodeText(bytes)) as { detail?: unknown }).detail
    return typeof detail === 'string' ? detail.slice(0, 300) : ''
  } catch {
    return ''
  }
}

function describeError(e: unknown): string {
  const err = toError(e)
  // undici says "fetch failed" and puts the reason (ECONNREFUSED…) in `cause`.
  const cause = err.cause as { code?: unknown; message?: unknown } | undefined
  const detail =
    typeof cause?.code === 'string'
      ? cause.code
      : typeof cause?.message === 'string'
        ? cause.message
        : ''
  return detail ? `${err.message} (${detail})` : err.message
}

/**
 * A rules source that polls an HTTP endpoint: the rules service's
 * `GET /v1/services/:service/ruleset`, whose body is `{ service, revision, rules }` (a bare
 * list of rules is accepted too).
 *
 * Each poll sends `If-None-Match` with the last ETag, so an unchanged rule set costs a 304.
 * When the server is down, slow, or answers with something that is not a valid rule set, the
 * rules in force stay; each distinct failure is logged and reported once, and the recovery
 * is logged. Failures in a row back the polls off (see `maxBackoffMs`) until one succeeds, and
 * a 503 or 429 with `Retry-After` defers the next poll to when the service asked (within
 * `maxBackoffMs`). Timers are unref'd: a poller never keeps a process alive.
 *
 * @param url - The endpoint (http or https).
 * @param options - Interval, jitter, headers, timeout, logger.
 * @returns The source, to pass to `createLimiter({ rules })`.
 * @throws OptionsError on a bad URL or options.
 * @example
 * ```ts
 * const rules = httpRules('http://rules.internal:8080/v1/services/api/ruleset', {
 *   headers: { authorization: `Bearer ${process.env.RULES_TOKEN}` },
 * })
 * const limiter = createLimiter({ rules, logger })
 * ```
 */
export function httpRules(url: string | URL, options: HttpRulesOptions = {}): HttpRulesSource {
  let target: URL
  try {
    target = new URL(url)
  } catch {
    throw optionError('httpRules: url', 'an absolute http(s) URL', String(url))
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw optionError('httpRules: url', 'an http(s) URL', target.protocol)
  }
  const intervalMs = checkIntInRange('httpRules: intervalMs', options.intervalMs, 10_000, 1, MAX_MS)
  const jitter = checkNumberInRange('httpRules: jitter', options.jitter, 0.1, 0, 1)
  const timeoutMs = checkIntInRange('httpRules: timeoutMs', options.timeoutMs, 5000, 1, MAX_MS)
  const maxBackoffMs = checkIntInRange(
    'httpRules: maxBackoffMs',
    options.maxBackoffMs,
    300_000,
    1,
    MAX_MS,
  )
  const maxBytes = checkIntInRange(
    'httpRules: maxBytes',
    options.maxBytes,
    5 * 1024 * 1024,
    1,
    Number.MAX_SAFE_INTEGER,
  )
  const fetchFn = options.fetch ?? globalThis.fetch
  const extraHeaders = { ...options.headers }
  // Never log the query string or credentials: tokens often travel there.
  const where = `${target.origin}${target.pathname}`
  const logger = scopeLogger(options.logger)
  const failures = new FailureLog(logger, where)
  const reportSettings = checkHostReportOptions(options.report)
  const reporter = reportSettings && new HostReporter(reportSettings)
  const reportTarget = reportSettings && (reportSettings.url ?? reportUrlFor(target))
  let reportRefused: string | undefined

  const runs = new SourceRuns()
  let onRules: (rules: Rule[], revision?: string) => void = () => {}
  let onError: (err: Error) => void = () => {}
  let timer: NodeJS.Timeout | undefined
  let inFlight: { readonly run: number; readonly done: Promise<void> } | undefined
  let controller: AbortController | undefined
  // What this run has delivered: a new run has delivered nothing, so its first poll asks for
  // the whole set (no If-None-Match) and hands it over even when it did not change.
  let etag: string | undefined
  let lastBody: string | undefined
  // Failed polls in a row, for the backoff; a good answer (a 304 included) sets it back to 0.
  let failuresInARow = 0
  // What the last poll's 503 or 429 asked for (`Retry-After`), for the next poll's delay.
  let askedMs: number | undefined

  const sourceError = (message: string, cause?: unknown): FloodgateError =>
    new FloodgateError('FG_ERR_RULES_SOURCE', `rules from ${where}: ${message}`, { cause })

  function succeeded(): void {
    failuresInARow = 0
    failures.ok()
  }

  async function pollOnce(): Promise<void> {
    const mine = runs.current
    const current = (): boolean => runs.isCurrent(mine)
    const abort = new AbortController()
    controller = abort
    askedMs = undefined
    const deadline = setTimeout(
      () => abort.abort(sourceError(`no complete answer within ${timeoutMs} ms`)),
      timeoutMs,
    )
    deadline.unref()
    try {
      const headers = new Headers(extraHeaders)
      headers.set('accept', 'application/json')
      if (etag !== undefined) headers.set('if-none-match', etag)
      const signal = abort.signal
      const discard = async (r: Response): Promise<void> => {
        if (r.body) await untilAborted(r.body.cancel(), signal)
      }
      const reported = await untilAborted(sendReport(headers, signal), signal)
      // The report counts as received only once its answer proves to be the service's (a 304,
      // or a valid set): a 200 from a proxy's error page never reached the service, and
      // forgetting its counts would lose them for good, where sending them again at worst
      // counts them twice.
      const receipt = reported?.acknowledged
      const res = reported?.res ?? (await untilAborted(follow(headers, signal, discard), signal))
      if (res.status === 304) {
        await discard(res)
        // Not modified from nothing: a cache or proxy answering for a copy this run never had.
        // Taken as news, a host starting behind it would run without rules and say nothing.
        if (!headers.has('if-none-match')) {
          throw sourceError(
            'HTTP 304 Not Modified to a poll without If-None-Match (no copy to keep)',
          )
        }
        receipt?.()
        if (current()) succeeded()
        return
      }
      if (!res.ok) {
        if (BUSY.has(res.status) && current()) {
          askedMs = parseRetryAfter(res.headers.get('retry-after'), Date.now())
        }
        await discard(res)
        throw sourceError(`HTTP ${res.status}`)
      }
      const length = Number(res.headers.get('content-length') ?? 0)
      if (length > maxBytes) {
        await discard(res)
        throw sourceError(`body of ${length} bytes exceeds maxBytes (${maxBytes})`)
      }
      const bytes = await untilAborted(readBounded(res, maxBytes), signal)
      if (bytes === undefined) throw sourceError(`body exceeds maxBytes (${maxBytes})`)
      let body: string
      try {
        body = decodeText(bytes)
      } catch (e) {
        throw sourceError(`body ${toError(e).message}`)
      }
      if (!current()) return
      const newEtag = res.headers.get('etag') ?? undefined
      // A server without ETags sends the same body every time: nothing to apply.
      if (body === lastBody) {
        receipt?.()
        etag = newEtag
        succeeded()
        return
      }
      let data: unknown
      try {
        data = JSON.parse(body)
      } catch {
        throw sourceError(`body is not JSON (${notJson(res.headers.get('content-type'), body)})`)
      }
      const duplicate = duplicateKeyIssue(body)
      if (duplicate !== undefined) throw sourceError(`body ${duplicate}`)
      const doc = parseRulesDocument(data)
      receipt?.()
      onRules(doc.rules, doc.revision ?? newEtag)
      // Remembered only once the body proved good, so a bad one is fetched (and refused) again.
      etag = newEtag
      lastBody = body
      succeeded()
    } catch (e) {
      if (!current()) return
      failuresInARow++
      const reason: unknown = abort.signal.aborted ? abort.signal.reason : e
      const err =
        reason instanceof FloodgateError ? reason : sourceError(describeError(reason), reason)
      if (failures.fail(err)) onError(err)
    } finally {
      clearTimeout(deadline)
      if (controller === abort) controller = undefined
    }
  }

  /**
   * GETs the rules, following redirects as fetch would, except that the configured headers go
   * to the configured origin only: from the first hop to another origin on, each request has
   * only what the poll itself sets (`accept`, `if-none-match`).
   */
  async function follow(
    headers: Headers,
    signal: AbortSignal,
    discard: (r: Response) => Promise<void>,
  ): Promise<Response> {
    let at = target
    let sent = headers
    for (let hops = 0; ; hops++) {
      const res = await fetchFn(at, { headers: sent, signal, redirect: 'manual' })
      const location = res.headers.get('location')
      if (!REDIRECTS.has(res.status) || location === null) return res
      await discard(res)
      if (hops === MAX_REDIRECTS) throw sourceError(`more than ${MAX_REDIRECTS} redirects`)
      let next: URL
      try {
        next = new URL(location, at)
      } catch {
        throw sourceError(`HTTP ${res.status} to an invalid Location`)
      }
      if (next.protocol !== 'http:' && next.protocol !== 'https:') {
        throw sourceError(`HTTP ${res.status} to a ${next.protocol} URL`)
      }
      if (next.origin !== target.origin && sent === headers) {
        sent = new Headers({ accept: 'application/json' })
        const tag = headers.get('if-none-match')
        if (tag !== null) sent.set('if-none-match', tag)
      }
      at = next
    }
  }

  /**
   * POST the report as the poll. Returns the answer to use as the poll's, with what marks the
   * report received (for the caller to call once the answer proves good), or undefined when the
   * service refused the report itself (then the caller polls plainly).
   */
  async function sendReport(
    headers: Headers,
    signal: AbortSignal,
  ): Promise<{ res: Response; acknowledged?: () => void } | undefined> {
    const pending = reporter?.next()
    if (pending === undefined || reportTarget === undefined) return undefined
    const reportHeaders = new Headers(headers)
    reportHeaders.set('content-type', 'application/json')
    const res = await fetchFn(reportTarget, {
      method: 'POST',
      headers: reportHeaders,
      body: pending.body,
      signal,
      // A redirected report is not sent on: it counts as refused, and the poll goes plainly.
      redirect: 'manual',
    })
    if (res.ok || res.status === 304) {
      reportRefused = undefined
      return { res, acknowledged: () => pending.acknowledged() }
    }
    // Auth failures, a busy service (429) and outages are the poll's too: let them count as
    // the poll's failure (and its Retry-After be heard) rather than poll again at once.
    if (res.status === 401 || res.status === 403 || res.status === 429 || res.status >= 500) {
      return { res }
    }
    const detail = await readProblemDetail(res)
    const why = `HTTP ${res.status}${detail ? `: ${detail}` : ''}`
    if (why !== reportRefused) {
      reportRefused = why
      logger.warn(
        { code: 'FG_WRN_REPORT_REFUSED', source: where, status: res.status },
        `the rules service refused this host's report (${why}); polling without it`,
      )
    }
    return undefined
  }

  function poll(): Promise<void> {
    // A poll of an earlier run is not this run's: it was cut short and delivers nothing.
    if (inFlight?.run === runs.current) return inFlight.done
    const entry = {
      run: runs.current,
      done: pollOnce().finally(() => {
        if (inFlight === entry) inFlight = undefined
      }),
    }
    inFlight = entry
    return entry.done
  }

  function schedule(mine: number): void {
    if (!runs.isCurrent(mine)) return
    timer = setTimeout(
      () => {
        void poll().then(() => schedule(mine))
      },
      retryAfterDelay(
        backoffDelay(intervalMs, maxBackoffMs, failuresInARow, jitter),
        askedMs,
        Math.max(intervalMs, maxBackoffMs),
        jitter,
      ),
    )
    timer.unref()
  }

  return {
    async start(rulesCallback, errorCallback, limiter, recoveredCallback) {
      const mine = runs.begin('httpRules')
      onRules = rulesCallback
      onError = errorCallback
      etag = undefined
      lastBody = undefined
      failuresInARow = 0
      askedMs = undefined
      reportRefused = undefined
      failures.reset()
      failures.onRecovered = recoveredCallback ?? (() => {})
      // The first poll runs while the limiter is being built and has nothing to report yet.
      reporter?.attach(undefined)
      await poll()
      if (!runs.isCurrent(mine)) return
      reporter?.attach(limiter)
      schedule(mine)
    },
    stop() {
      runs.end()
      clearTimeout(timer)
      controller?.abort(sourceError('stopped'))
    },
    poll,
  }
}
