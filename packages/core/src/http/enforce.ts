import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Decision } from '../decision.js'
import { clientGone } from './client-gone.js'
import { queueRefusal } from '../limiter-decide.js'
import { draft7Fields, epochResetSeconds, retryAfterSeconds, type HeaderFormat } from './headers.js'
import { headerCount } from './rate-limit-fields.js'
import type { RequestFacts } from '../request-facts.js'
import type { RequestOutcome } from '../limiter-types.js'
import type { Rejection } from './adapter-options.js'
import { PROBLEM_CONTENT_TYPE, serializedProblem } from './problem-details.js'
import { rateLimitInfo, type RateLimitInfo } from './rate-limit-info.js'
import { limitField, policyField } from './rate-limit-fields.js'

/** The part of a `Limiter` the HTTP flow uses; any core `Limiter` satisfies it. */
export interface EnforcingLimiter<Req = unknown> {
  check(facts: RequestFacts<Req>): Decision | Promise<Decision>
  release(decision: Decision, outcome?: RequestOutcome): void
  waitInQueue(decision: Decision, signal?: AbortSignal): Promise<boolean>
}

/**
 * How an adapter plugs its framework into {@link enforce}. One static object per adapter: the
 * per-request state travels in `ctx`, so no closure is allocated per request.
 *
 * @typeParam C - the adapter's per-request context (Express: `{ req, res, next }`, Koa: `ctx`)
 * @typeParam R - what the adapter's middleware returns (Koa: the `next()` promise)
 */
export interface HttpIo<C, R> {
  /** Node's response under the framework's; headers are set on it, and its `close` is watched. */
  response(ctx: C): ServerResponse
  /** Node's request: the double-count guard marks it. */
  request(ctx: C): IncomingMessage
  /**
   * Set a response header the framework's way, when it buffers headers itself (Fastify's
   * `reply.header`: writing them on the raw response first would push Node's `writeHead` onto
   * its slower merging path). Default: `response(ctx).setHeader`. Never called once the
   * response's headers are sent ({@link enforce} checks that once per response).
   */
  readonly setHeader?: ((ctx: C, name: string, value: string) => void) | undefined
  /**
   * True when `setHeader` lower-cases names anyway (Fastify): Floodgate's own header names are
   * then passed lower-cased, which saves the framework the conversion.
   */
  readonly lowerCaseNames?: boolean | undefined
  /**
   * Hand the decision to the route handler (`req.rateLimit`, `request.rateLimit`,
   * `ctx.state.rateLimit`); called before `proceed` and before `reject`.
   */
  readonly attach?: ((ctx: C, info: RateLimitInfo) => void) | undefined
  /** Continue to the route handler. */
  proceed(ctx: C): R
  /** Answer a refusal. Headers are already set; write `rejection.status` and the body. */
  reject(ctx: C, rejection: Rejection): R
  /**
   * The connection is gone (dropped by a rule, or closed by the client before the check or while
   * queued): make sure the framework writes nothing and the handler never runs (Koa:
   * `ctx.respond = false`).
   */
  abandon(ctx: C): R
  /**
   * Called for a request whose connection is open but tells no client address (an app on a Unix
   * socket): the adapter's warning that rules keyed by IP share one bucket for such requests
   * (see `missingAddressWarning`). Not called for a client already gone.
   */
  readonly missingAddress?: ((facts: { readonly ip?: string | undefined }) => void) | undefined
}

/** Per-mount settings {@link enforce} needs, resolved once at startup. */
export interface EnforceSettings<Req = unknown> {
  /** Header format, or undefined for no RateLimit headers (Retry-After is still sent). */
  readonly format: HeaderFormat | undefined
  readonly shadowHeader: boolean
  /**
   * How a finished response ended, for rules that count by outcome; must not throw.
   * @default {@link defaultOutcome} (a status below 400 succeeded)
   */
  readonly outcomeOf?: ((req: Req | undefined, res: ServerResponse) => RequestOutcome) | undefined
}

/**
 * The outcome of a response that finished: succeeded when its status is below 400.
 *
 * @param res - the response
 * @returns `'succeeded'` or `'failed'`
 */
export function defaultOutcome(res: ServerResponse): RequestOutcome {
  return res.statusCode < 400 ? 'succeeded' : 'failed'
}

/** Name of the header that reports shadow rules that would have refused (opt-in). */
export const SHADOW_HEADER = 'Floodgate-Shadow'

// Header names as the drafts spell them, and lower-cased for frameworks that lower-case names
// themselves (the same bytes on the wire, without a toLowerCase per header per request).
type Names = readonly [
  policy: string,
  limit: string,
  retryAfter: string,
  shadow: string,
  legacyLimit: string,
  legacyRemaining: string,
  legacyReset: string,
]
const NAMES: Names = [
  'RateLimit-Policy',
  'RateLimit',
  'Retry-After',
  SHADOW_HEADER,
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
]
const LOWER_NAMES: Names = NAMES.map((n) => n.toLowerCase()) as unknown as Names

type SetHeader = ServerResponse['setHeader']

// `native` is res.setHeader read once per response (undefined when the adapter sets headers its
// own way): on Express every read of a method from a response is a hidden-class miss.
function put<C>(
  ctx: C,
  io: HttpIo<C, unknown>,
  res: ServerResponse,
  native: SetHeader | undefined,
  name: string,
  value: string,
): void {
  // Node checks every header value with a regular expression, whose fast path reads only flat
  // strings: a value built by concatenation (the `RateLimit` field) would take V8's runtime path,
  // which flattens it and costs about 450 instructions more per value (callgrind). Reading a
  // character flattens it in place first, for less; on a flat string the read is a few
  // instructions.
  value.charCodeAt(0)
  if (native !== undefined) native.call(res, name, value)
  else io.setHeader!(ctx, name, value)
}

/**
 * The decision's headers, unless the response's headers are sent already: an earlier middleware
 * may have sent them, and then the request is decided anyway but no header is written. On Node's
 * own `setHeader` the check is its throw: the first call throws ERR_HTTP_HEADERS_SENT before
 * setting anything, where reading `res.headersSent` first would cost an inline-cache miss per
 * response on Express, whose responses get a new hidden class each. A framework's own
 * `setHeader` (Fastify's) need not throw, so its `headersSent` is read first.
 */
function setHeaders<C>(
  ctx: C,
  io: HttpIo<C, unknown>,
  res: ServerResponse,
  decision: Decision,
  settings: Pick<EnforceSettings, 'format' | 'shadowHeader'>,
): void {
  if (io.setHeader !== undefined && res.headersSent) return
  try {
    const names = io.lowerCaseNames === true ? LOWER_NAMES : NAMES
    // Called as native.call(res, …) in put(): read once, bound to nothing on purpose.
    // eslint-disable-next-line @typescript-eslint/unbound-method
    const native = io.setHeader === undefined ? res.setHeader : undefined
    const format = settings.format
    // No quota claims when the decision failed open (the store is down; nothing was judged).
    if (format !== undefined && !decision.failedOpen) {
      if (format === 'draft-7') {
        const fields = draft7Fields(decision)
        if (fields) {
          put(ctx, io, res, native, names[0], fields.policy)
          put(ctx, io, res, native, names[1], fields.limit)
        }
      } else {
        const policy = policyField(decision)
        if (policy !== '') {
          if (format !== 'legacy') {
            put(ctx, io, res, native, names[0], policy)
            put(ctx, io, res, native, names[1], limitField(decision))
          }
          if (format !== 'ietf') {
            put(ctx, io, res, native, names[4], String(headerCount(decision.limit)))
            put(ctx, io, res, native, names[5], String(headerCount(decision.remaining)))
            put(ctx, io, res, native, names[6], String(epochResetSeconds(decision)))
          }
        }
      }
    }
    // A deny list or an unknown client is not lifted by waiting: no Retry-After for those.
    if (decision.action === 'reject' && decision.reason === undefined) {
      put(ctx, io, res, native, names[2], String(retryAfterSeconds(decision.retryAfterMs)))
    }
    if (settings.shadowHeader) {
      let ids = ''
      for (const o of decision.outcomes) {
        if (o.shadow && !o.allowed) ids = ids === '' ? o.rule.id : `${ids}, ${o.rule.id}`
      }
      if (ids !== '') put(ctx, io, res, native, names[3], ids)
    }
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code
    if (code !== 'ERR_HTTP_HEADERS_SENT' && code !== 'ERR_HTTP2_HEADERS_SENT') throw err
  }
}

// What an admitted request holds until its response ends: a concurrency slot (given back
// then), or units of a rule that counts by outcome (given back when the outcome is not counted).
const HOLDS_SLOT = 1
const BY_OUTCOME = 2
function holdsUntilEnd(decision: Decision): number {
  const outcomes = decision.outcomes
  let holds = 0
  for (let i = 0; i < outcomes.length; i++) {
    const rule = outcomes[i]!.rule
    if (rule.algorithm === 'concurrency' || rule.algorithm === 'adaptive') holds |= HOLDS_SLOT
    else if (rule.count !== 'all') holds |= BY_OUTCOME
  }
  return holds
}

/** How the request ended: a response that did not finish (the client left) failed. */
function outcomeAtClose<Req>(
  req: Req | undefined,
  res: ServerResponse,
  settings: EnforceSettings<Req>,
): RequestOutcome {
  if (!res.writableFinished) return 'failed'
  return settings.outcomeOf ? settings.outcomeOf(req, res) : defaultOutcome(res)
}

/**
 * Whether the response's connection is gone (its 'close' may have fired already). A pipelined
 * response queued behind an earlier one on its connection has no socket yet: its request's
 * socket is the connection.
 */
function closed(req: IncomingMessage, res: ServerResponse): boolean {
  if (res.destroyed || res.closed) return true
  const socket = res.socket ?? req.socket
  return socket?.destroyed === true
}

// Callbacks waiting for a connection to close, one 'close' listener per connection: a client
// that pipelines many requests must not pile listeners on its socket (Node warns past ten).
const waitingOnSocket = new WeakMap<Socket, Set<() => void>>()

function onSocketClose(socket: Socket, fn: () => void): () => void {
  let waiting = waitingOnSocket.get(socket)
  if (waiting === undefined) {
    const created = new Set<() => void>()
    waitingOnSocket.set(socket, created)
    socket.once('close', () => {
      waitingOnSocket.delete(socket)
      for (const f of created) f()
    })
    waiting = created
  }
  const set = waiting
  set.add(fn)
  return () => void set.delete(fn)
}

/**
 * What an HTTP/2 request reaches through Node's compatibility response
 * (`http2.createServer(handler)`, Fastify's `http2: true`); an HTTP/1 response has no `stream`.
 */
interface Http2Exchange {
  readonly stream?: Http2StreamLike
}

/** The part of Node's `Http2Stream` the HTTP flow reads. */
interface Http2StreamLike {
  destroy(): void
  readonly session?: { close(): void } | undefined
  /** Set once the stream is closed on the wire (reset by either side, or ended both ways). */
  readonly closed: boolean
  once(event: 'end', listener: () => void): unknown
  off(event: 'end', listener: () => void): unknown
}

/**
 * `onceEnded` for an HTTP/2 response. A client that closes a stream with `RST_STREAM` and the
 * code `NO_ERROR` (Node's client does so for each open stream when its session is destroyed)
 * leaves the stream closed on the wire, but Node keeps it open, and its response never emits
 * `close`, while the handler has not written the end of its response (a write after that
 * never completes). Node ends the stream's request side then instead: a request side that ends
 * on a stream already closed is a client that left.
 */
function onceStreamEnded(
  res: ServerResponse,
  stream: Http2StreamLike,
  done: () => void,
): () => void {
  const stop = (): void => {
    res.off('close', finish)
    stream.off('end', end)
  }
  const finish = (): void => {
    stop()
    done()
  }
  const end = (): void => {
    if (stream.closed) finish()
  }
  res.once('close', finish)
  stream.once('end', end)
  return stop
}

/**
 * Call `done` once, when the exchange ends: the response closes (finished, aborted, or ended by
 * an error), or, for a pipelined response still queued behind an earlier one on its connection,
 * the connection closes. Node never closes a queued response whose client left (it has no
 * socket to watch), so listening to the response alone would keep what the request holds until
 * its lease expires.
 *
 * @returns a function that removes the listeners
 */
function onceEnded(req: IncomingMessage, res: ServerResponse, done: () => void): () => void {
  const stream = (res as Http2Exchange).stream
  if (stream !== undefined) return onceStreamEnded(res, stream, done)
  // res.socket is read once: on Express every read of a response property is a cache miss.
  const socket = res.socket === null ? req.socket : null
  if (socket === null) {
    res.once('close', done)
    return () => res.off('close', done)
  }
  const end = (): void => {
    res.off('close', end)
    unwatch()
    done()
  }
  res.once('close', end)
  const unwatch = onSocketClose(socket, end)
  return () => {
    res.off('close', end)
    unwatch()
  }
}

/**
 * Close the connection of a dropped request. A response pipelined behind others on its
 * connection has no socket until they are written (Node hands it the socket then): destroying
 * nothing would leave the connection open forever, waiting for a response that never comes.
 * The responses before it are written, then the connection is closed.
 *
 * On HTTP/2 the response's socket is a proxy of the request's stream (destroying it resets the
 * stream and leaves the connection open), and once the stream has closed it is undefined. The
 * connection is closed the HTTP/2 way instead: GOAWAY, so the streams already in flight on it
 * are answered and no new one is taken, then this stream is reset.
 */
function dropConnection(res: ServerResponse): void {
  const stream = (res as Http2Exchange).stream
  if (stream !== undefined) {
    stream.session?.close()
    stream.destroy()
    return
  }
  const socket = res.socket
  if (socket !== null) socket.destroy()
  else res.once('socket', (s: Socket) => s.destroy())
}

/**
 * Write a refusal as `application/problem+json` on a raw Node response, with its
 * `Content-Length` (also on a HEAD response, which carries no body). Adapters whose framework
 * has its own reply API use that instead; the bytes are the same.
 *
 * @param res - the response (headers from {@link enforce} already set)
 * @param rejection - the refusal
 */
export function writeProblem(res: ServerResponse, rejection: Rejection): void {
  res.statusCode = rejection.status
  res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE)
  // Node computes Content-Length from the body it writes, which a HEAD response has none of:
  // set it, so a refused HEAD has the headers of the refused GET, as on Fastify and Koa.
  res.setHeader('Content-Length', Buffer.byteLength(rejection.json))
  res.end(rejection.json)
}

function apply<Req, C, R>(
  limiter: EnforcingLimiter<Req>,
  decision: Decision,
  ctx: C,
  io: HttpIo<C, R>,
  settings: EnforceSettings<Req>,
  req: Req | undefined,
): R | Promise<R> {
  const res = io.response(ctx)
  const action = decision.action
  if (action === 'drop') {
    // No response at all: the abusive client learns nothing, and the handler never runs.
    dropConnection(res)
    return io.abandon(ctx)
  }
  setHeaders(ctx, io as HttpIo<C, unknown>, res, decision, settings)
  io.attach?.(ctx, rateLimitInfo(decision))
  if (action === 'reject') {
    const { body, json } = serializedProblem(decision)
    return io.reject(ctx, { status: body.status, body, json, decision })
  }
  const holds = decision.allowed ? holdsUntilEnd(decision) : 0
  if (holds !== 0) {
    const raw = io.request(ctx)
    if (closed(raw, res)) {
      // The client left while an asynchronous store was deciding: its 'close' has fired
      // already, so a listener would never run and the slot would stay taken until its lease
      // expires. Give everything back now; nobody is there to answer.
      limiter.release(decision, 'abandoned')
      return io.abandon(ctx)
    }
    // 'close' follows 'finish' and also fires when the client aborts or the handler's error
    // ends the response; release is idempotent, so the order does not matter.
    if (holds & BY_OUTCOME) {
      onceEnded(raw, res, () => limiter.release(decision, outcomeAtClose(req, res, settings)))
    } else onceEnded(raw, res, () => limiter.release(decision))
  }
  if (action === 'queue') return queue(limiter, decision, ctx, io, res, settings)
  return io.proceed(ctx)
}

async function queue<Req, C, R>(
  limiter: EnforcingLimiter<Req>,
  decision: Decision,
  ctx: C,
  io: HttpIo<C, R>,
  res: ServerResponse,
  settings: EnforceSettings<Req>,
): Promise<R> {
  const raw = io.request(ctx)
  const aborter = new AbortController()
  const stopWatching = onceEnded(raw, res, () => aborter.abort())
  // With an asynchronous store the client may have left before the decision came back: its
  // 'close' has fired already, so give the reservation back now rather than wait it out.
  if (closed(raw, res)) aborter.abort()
  let admitted: boolean
  try {
    admitted = await limiter.waitInQueue(decision, aborter.signal)
  } finally {
    stopWatching()
  }
  // A client that left while queued gets nothing written; its reservation was refunded.
  if (aborter.signal.aborted || closed(raw, res)) {
    limiter.release(decision, 'abandoned')
    return io.abandon(ctx)
  }
  if (admitted) return io.proceed(ctx)
  // Still there but not admitted (the limiter closed while it waited): answer, or the
  // connection would wait forever for a response nobody writes.
  const refusal = queueRefusal(decision)
  setHeaders(ctx, io as HttpIo<C, unknown>, res, refusal, settings)
  io.attach?.(ctx, rateLimitInfo(refusal))
  const { body, json } = serializedProblem(refusal)
  return io.reject(ctx, { status: body.status, body, json, decision: refusal })
}

/**
 * The framework-neutral enforcement flow every adapter runs: check the request, then
 *
 * - client already gone (its connection closed before the limiter saw the request) → `abandon`;
 *   nothing is checked or counted;
 * - allow → RateLimit headers, then `proceed`;
 * - queue → wait for the reservation (`limiter.waitInQueue`), then `proceed`; a client that
 *   disconnects meanwhile frees its place and nothing is written; a wait the limiter ends
 *   (`close()`) is answered as a refusal (429, `Retry-After` the wait it had);
 * - reject → `Retry-After` and RateLimit headers, then `reject` with a problem+json body;
 * - drop → destroy the socket; nothing is written and the handler never runs;
 * - failed open (store error or timeout) → `proceed` with no RateLimit headers.
 *
 * Concurrency slots are released exactly once, when the response closes (finished, aborted,
 * or ended by an error), or when the connection of a pipelined response still queued behind
 * another closes. Rules that count only failed or only successful requests are settled
 * then too: a finished response's outcome comes from `settings.outcomeOf` (default: a status
 * below 400 succeeded), and a response that did not finish failed. With a synchronous store
 * (MemoryStore) and an allowed request, no promise is created.
 *
 * @param limiter - the limiter to consult
 * @param facts - the request's facts
 * @param ctx - the adapter's per-request context
 * @param io - the adapter's framework bindings
 * @param settings - header settings resolved at startup
 * @returns whatever `io` returned (a promise when the check or the queue was asynchronous)
 */
export function enforce<Req, C, R>(
  limiter: EnforcingLimiter<Req>,
  facts: RequestFacts<Req>,
  ctx: C,
  io: HttpIo<C, R>,
  settings: EnforceSettings<Req>,
): R | Promise<R> {
  // The client left (while an earlier asynchronous middleware or hook ran, or with its request
  // in the same read): nobody is there to answer, and its address is unknown once the socket is
  // closed (Node reads it from the live socket), so every such client would be charged to one
  // shared bucket. Check nothing. A socket's address is read once here, the common case's cost.
  const socket = io.request(ctx).socket
  if (socket?.destroyed === true) return io.abandon(ctx)
  if (socket?.remoteAddress === undefined) {
    if (clientGone(socket)) return io.abandon(ctx)
    io.missingAddress?.(facts)
  }
  const decision = limiter.check(facts)
  if (decision instanceof Promise) {
    return decision.then((d) => apply(limiter, d, ctx, io, settings, facts.request))
  }
  return apply(limiter, decision, ctx, io, settings, facts.request)
}
