import type { IncomingMessage } from 'node:http'
import type { HeaderFormat } from '../http/headers.js'
import type { Limiter, LimiterOptions } from '../limiter.js'
import type { RateLimitInfo } from '../http/rate-limit-info.js'
import type { RuleInput } from '../rules/schema.js'

/** A route of a scenario app. Every handler answers `200 {"ok":true}` unless `slow` or `fail`. */
export interface ScenarioRoute {
  readonly method: 'GET' | 'POST'
  /** Route pattern in the `/users/:id` syntax all three frameworks share. */
  readonly path: string
  /** Mount the limiter on this route with this cost (Express/Koa: route-level mount). */
  readonly cost?: number
  /** Not rate-limited at all (Fastify: `config.rateLimit: false`; Express/Koa: routed before the limiter). */
  readonly exempt?: boolean
  /** The handler waits until the harness's `gate` opens (for aborts while in flight). */
  readonly slow?: boolean
  /** The handler throws. */
  readonly fail?: boolean
  /**
   * The handler answers `{ ok: true, rateLimit: echoRateLimit(<the adapter's rateLimit>) }`, to
   * show what handlers read (`req.rateLimit`, `request.rateLimit`, `ctx.state.rateLimit`).
   */
  readonly echo?: boolean
}

/** What an `echo` route answers about the decision its handler read. */
export interface EchoedRateLimit {
  readonly limit: number
  readonly remaining: number
  readonly resetMs: number
  readonly action: string
}

/**
 * The part of a handler's {@link RateLimitInfo} an `echo` route answers with (null when the
 * adapter set none).
 *
 * @param info - what the adapter set on the request
 * @returns a JSON-ready summary
 */
export function echoRateLimit(info: RateLimitInfo | undefined): EchoedRateLimit | null {
  if (info === undefined) return null
  return {
    limit: info.limit,
    remaining: info.remaining,
    resetMs: info.resetMs,
    action: info.decision.action,
  }
}

/** What an adapter harness needs to build one scenario's app. */
export interface HarnessSetup {
  /** The limiter to mount (shared-Limiter form of the adapter). */
  readonly limiter: Limiter<never>
  readonly routes: readonly ScenarioRoute[]
  /** Trust X-Forwarded-For from any peer (Express `trust proxy`, Fastify `trustProxy`, Koa `app.proxy` + `maxIpsCount: 1`). */
  readonly trustProxy: boolean
  /** Adapter options every mount gets. */
  readonly options: {
    readonly headers?: boolean | HeaderFormat
    readonly shadowHeader?: boolean
  }
  /**
   * Call at the start of every handler with Node's request; await it in `slow` handlers before
   * answering.
   */
  readonly enter: (route: ScenarioRoute, req: IncomingMessage) => Promise<void>
  /**
   * Await on every request in a middleware (Fastify: an `onRequest` hook) that runs before the
   * limiter, as an authentication step that reads a database would.
   */
  readonly beforeLimiter: (req: IncomingMessage) => Promise<void>
}

/** A response as the scenario runner compares it. */
export interface ScenarioResponse {
  readonly status: number
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  readonly text: string
}

/** A request a scenario sends. */
export interface ScenarioRequest {
  readonly method: 'GET' | 'POST'
  readonly path: string
  readonly headers?: Readonly<Record<string, string>>
}

/** A running app under test. */
export interface RunningApp {
  /** Send through the framework's test client (supertest, `inject()`). */
  send(req: ScenarioRequest): Promise<ScenarioResponse>
  /** Base URL of a listening loopback server, for drops and aborts that need a real socket. */
  readonly url: string
  close(): Promise<void>
}

/** One adapter under the scenario table. */
export interface AdapterHarness {
  readonly name: string
  start(setup: HarnessSetup): Promise<RunningApp>
}

/**
 * What a step expects. Headers listed are compared exactly (undefined = absent), or matched
 * when given as a RegExp (a value that depends on the wall clock, such as `X-RateLimit-Reset`).
 */
export interface ScenarioExpect {
  readonly status?: number
  readonly headers?: Readonly<Record<string, string | RegExp | undefined>>
  /** Parsed JSON body; omitted = not compared. */
  readonly body?: unknown
  /** The connection is destroyed without a response. */
  readonly dropped?: boolean
}

/** One step of a scenario. */
export type ScenarioStep =
  | {
      readonly send: ScenarioRequest
      readonly expect: ScenarioExpect
      /** Over a real socket even when the harness's client is in-process (Fastify's inject). */
      readonly raw?: boolean
    }
  /** Send without awaiting the answer; the step ends once the limiter has decided it. */
  | { readonly sendInBackground: ScenarioRequest; readonly expect: ScenarioExpect }
  /** Open a real request, wait until its handler runs, then abort it client-side and wait for the refund. */
  | { readonly abortInFlight: ScenarioRequest }
  /** Open a real request, wait until the limiter decided it (queued), abort it, wait for the refund. */
  | { readonly abortQueued: ScenarioRequest }
  /**
   * Open a real request and destroy it client-side while the store's (held) answer is still on
   * its way; the answer is delivered at the next `deliverHeld` step.
   */
  | { readonly abortBeforeDecision: ScenarioRequest }
  /**
   * Send these requests pipelined on one connection (each response waits behind the one before
   * it), wait until the limiter decided every one, then close the connection: within 2 s the
   * store must be asked for `refunds` more refunds.
   */
  | { readonly abortPipelined: readonly ScenarioRequest[]; readonly refunds: number }
  /**
   * Send these requests pipelined on one connection and wait (at most 2 s) for the server to
   * close it: exactly `answered` responses must have come back before it did.
   */
  | { readonly closesPipelined: readonly ScenarioRequest[]; readonly answered: number }
  /**
   * Open a real request, hold it before the limiter until its client has left (the server has
   * closed its socket), then let it go on and the limiter act on it.
   */
  | { readonly leaveBeforeLimiter: ScenarioRequest }
  /** Deliver the held store answer and let the limiter act on it. */
  | { readonly deliverHeld: true }
  /** Wait for every background request and check its expectation. */
  | { readonly settle: true }
  /** Move the injected clock. */
  | { readonly advanceMs: number }
  /** Let slow handlers answer from now on. */
  | { readonly openGate: true }
  /** How many times handlers ran so far (all routes). */
  | { readonly handlerCalls: number }
  /**
   * Wait until the store has been asked for this many refunds in all (responses that ended),
   * and fail if it was asked for more.
   */
  | { readonly refunds: number }
  /**
   * Act on the limiter between requests, as an application does outside a request (`reset`
   * after a CAPTCHA, `get`, `penalty`); the function may assert what it reads.
   */
  | { readonly act: (limiter: Limiter<never>) => Promise<void> }

/** One row of the table. */
export interface AdapterScenario {
  readonly name: string
  readonly rules: readonly RuleInput[]
  readonly routes?: readonly ScenarioRoute[]
  /**
   * `garbage`/`garbage-async`: answers `undefined`, then a wrong-length array, then results with
   * wrong types, in turn (synchronously or as a promise).
   */
  readonly store?: 'memory' | 'throwing' | 'hanging' | 'garbage' | 'garbage-async'
  /**
   * The limiter's `decisionTimeoutMs`, for the rows that test the deadline. Unset: 10 s, so
   * a store answering over a real socket on a busy machine is never failed open by the
   * deadline in a row about something else.
   */
  readonly timeoutMs?: number
  /**
   * Limiter options beyond rules, store and clock: allow and deny lists, unmatched requests,
   * limit functions.
   */
  readonly limiter?: Pick<LimiterOptions, 'allow' | 'deny' | 'denyStatus' | 'unmatched' | 'limits'>
  readonly trustProxy?: boolean
  readonly options?: HarnessSetup['options']
  readonly steps: readonly ScenarioStep[]
}
