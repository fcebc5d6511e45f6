import {
  connect,
  constants,
  type ClientHttp2Session,
  type ClientHttp2Stream,
  type Http2ServerRequest,
} from 'node:http2'
import { afterEach, describe, expect, it } from 'vitest'
import { createLimiter } from '../limiter.js'
import type { Limiter } from '../limiter-types.js'
import type { RuleInput } from '../rules/schema.js'
import { MemoryStore } from '../stores/memory-store.js'
import type { Store } from '../stores/store.js'

/** A cleartext HTTP/2 server (h2c) the suite talks to; the suite closes it after each test. */
export interface Http2App {
  readonly port: number
  close(): Promise<void>
}

/**
 * Starts an app on a cleartext HTTP/2 server, listening on 127.0.0.1: the adapter's
 * `rateLimit(limiter)`, then a handler for every path that awaits `enter(path, req)` and
 * answers `ok`, `req` being Node's compatibility request (Fastify's `request.raw`, Koa's
 * `ctx.req`). Every error the framework reports (Koa's `error` event, Fastify's error handler)
 * is pushed to `errors`. `describeHttp2` reads only the path; `describeHttp2AbortProperty`
 * needs the request too, to see its stream close.
 */
export type Http2Serve = (
  limiter: Limiter<never>,
  enter: (path: string, req?: Http2ServerRequest) => Promise<void>,
  errors: unknown[],
) => Promise<Http2App>

/** A response as a stream got it. */
export interface Http2Answer {
  readonly status: number | undefined
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  readonly body: string
}

/** A request sent on a stream. */
export interface Http2Sent {
  readonly stream: ClientHttp2Stream
  /** Settles when the stream closes; `status` is undefined when no response came. */
  readonly answer: Promise<Http2Answer>
}

/** Sends a request without a body on a new stream of `session`. */
export function send(session: ClientHttp2Session, path: string, method = 'GET'): Http2Sent {
  const stream = session.request({ ':path': path, ':method': method })
  const answer = new Promise<Http2Answer>((resolve) => {
    let headers: Http2Answer['headers'] = {}
    let body = ''
    stream.on('response', (h) => (headers = h))
    stream.setEncoding('utf8')
    stream.on('data', (d: string) => (body += d))
    // A reset stream errors; the answer (none) is what the tests read.
    stream.on('error', () => {})
    stream.on('close', () => {
      const status = headers[':status']
      resolve({ status: typeof status === 'number' ? status : undefined, headers, body })
    })
  })
  stream.end()
  return { stream, answer }
}

/** A gate: `wait()` settles once `open()` is called. */
function gate(): { wait: () => Promise<void>; open: () => void } {
  let open = (): void => {}
  const p = new Promise<void>((resolve) => (open = resolve))
  return { wait: () => p, open }
}

/** A MemoryStore whose answers are held while `hold` is set: a store still deciding. */
function heldStore(): Store & { hold: ReturnType<typeof gate> | undefined } {
  const memory = new MemoryStore()
  const store = {
    hold: undefined as ReturnType<typeof gate> | undefined,
    consume: async (...args: Parameters<MemoryStore['consume']>) => {
      const results = memory.consume(...args).map((r) => ({ ...r }))
      await store.hold?.wait()
      return results
    },
    refund: (...args: Parameters<MemoryStore['refund']>) => memory.refund(...args),
  }
  return store
}

/**
 * Resolves once the server has read everything sent before on the session: it answers a PING
 * after the frames ahead of it, and its request handlers have run by then. On a session still
 * connecting, the PING waits for the connection (Node cancels a PING sent before it).
 */
export async function roundTrip(session: ClientHttp2Session): Promise<void> {
  if (session.connecting) {
    await new Promise<void>((resolve, reject) => {
      session.once('connect', () => resolve())
      session.once('close', () => reject(new Error('session closed while connecting')))
    })
  }
  return new Promise((resolve, reject) => {
    session.ping((err) => (err ? reject(err) : setImmediate(resolve)))
  })
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((r) => setImmediate(r))
  expect(check()).toBe(true)
}

/**
 * What every adapter that runs on `node:http2` must do there: the same headers and refusals as
 * on HTTP/1.1, concurrency slots and queue places given back when a stream is reset, and a
 * dropped request closing its connection (GOAWAY) without an error, also when its stream was
 * reset while the store was deciding.
 *
 * @param name - the adapter, for the test titles
 * @param serve - starts the app on an h2c server
 */
export function describeHttp2(name: string, serve: Http2Serve): void {
  describe(`${name} on HTTP/2 (h2c)`, () => {
    const open: { app: Http2App; session: ClientHttp2Session }[] = []
    afterEach(async () => {
      for (const { app, session } of open.splice(0)) {
        session.destroy()
        await app.close()
      }
    })

    async function start(
      rules: RuleInput[],
      enter: (path: string) => Promise<void> = () => Promise.resolve(),
    ) {
      const store = heldStore()
      const limiter = createLimiter({ rules, store, decisionTimeoutMs: 60_000 })
      const errors: unknown[] = []
      const app = await serve(limiter, enter, errors)
      const session = connect(`http://127.0.0.1:${app.port}`)
      session.on('error', () => {})
      open.push({ app, session })
      return { limiter, store, errors, session }
    }

    it('answers with RateLimit headers, then a 429 with Retry-After and a problem body; HEAD gets the headers without a body', async () => {
      const { session, errors } = await start([{ id: 'per-ip', limit: 1, window: '1m' }])
      const ok = await send(session, '/').answer
      expect(ok.status).toBe(200)
      expect(ok.headers['ratelimit']).toBe('"per-ip";r=0;t=60')
      const refused = await send(session, '/').answer
      expect(refused.status).toBe(429)
      expect(refused.headers['retry-after']).toBe('60')
      expect(JSON.parse(refused.body)).toMatchObject({
        status: 429,
        'violated-policies': ['per-ip'],
      })
      const head = await send(session, '/', 'HEAD').answer
      expect(head.status).toBe(429)
      expect(head.headers['retry-after']).toBe('60')
      expect(head.body).toBe('')
      expect(errors).toEqual([])
    })

    it('gives a concurrency slot back when the client resets the stream in the handler', async () => {
      const held = gate()
      const entered = gate()
      const { session, limiter } = await start(
        [{ id: 'one', algorithm: 'concurrency', limit: 1 }],
        (path) => {
          if (path !== '/slow') return Promise.resolve()
          entered.open()
          return held.wait()
        },
      )
      const slow = send(session, '/slow')
      await entered.wait()
      expect(limiter.counters().inFlight.get('one')).toBe(1)
      slow.stream.close(constants.NGHTTP2_CANCEL)
      await slow.answer
      await until(() => (limiter.counters().inFlight.get('one') ?? 0) === 0)
      expect((await send(session, '/').answer).status).toBe(200)
      held.open()
    })

    it('gives a queue place and its reservation back when the client resets a queued stream', async () => {
      const { session } = await start([
        {
          id: 'smooth',
          limit: 10,
          window: '1s',
          burst: 1,
          // A kept reservation would make the next wait 200 ms (> maxWait); a kept place, a full queue.
          onLimit: { action: 'queue', maxWait: '150ms', maxQueue: 1 },
        },
      ])
      expect((await send(session, '/').answer).status).toBe(200)
      const queued = send(session, '/')
      await roundTrip(session)
      queued.stream.close(constants.NGHTTP2_CANCEL)
      await queued.answer
      expect((await send(session, '/').answer).status).toBe(200)
    })

    it('drops a request by closing the connection (GOAWAY) after the streams in flight are answered', async () => {
      const held = gate()
      const entered = gate()
      const { session, limiter } = await start(
        [{ id: 'abuse', match: '/drop', limit: 1, window: '1m', onLimit: 'drop' }],
        (path) => {
          if (path !== '/slow') return Promise.resolve()
          entered.open()
          return held.wait()
        },
      )
      let goaway = false
      session.once('goaway', () => (goaway = true))
      expect((await send(session, '/drop').answer).status).toBe(200)
      const slow = send(session, '/slow')
      await entered.wait()
      const dropped = await send(session, '/drop').answer
      expect(dropped.status).toBeUndefined()
      // The GOAWAY went out before the reset that ended the dropped stream.
      expect(goaway).toBe(true)
      held.open()
      expect(await slow.answer).toMatchObject({ status: 200, body: 'ok' })
      await new Promise<void>((resolve) =>
        session.closed ? resolve() : session.once('close', resolve),
      )
      expect(limiter.counters().total.dropped).toBe(1)
    })

    it('drops a request whose stream was reset while the store was deciding, without an error', async () => {
      const { session, limiter, store, errors } = await start([
        { id: 'abuse', limit: 1, window: '1m', onLimit: 'drop' },
      ])
      expect((await send(session, '/').answer).status).toBe(200)
      store.hold = gate()
      const late = send(session, '/')
      await roundTrip(session)
      late.stream.close(constants.NGHTTP2_CANCEL)
      await late.answer
      // The server has seen the reset before the decision arrives.
      await roundTrip(session)
      store.hold.open()
      await until(() => limiter.counters().total.dropped === 1)
      // Errors are reported on a later turn; one more exchange lets them surface.
      store.hold = undefined
      await send(session, '/').answer
      expect(errors).toEqual([])
    })
  })
}
