import { connect, constants, type ClientHttp2Session, type Http2Session } from 'node:http2'
import fc from 'fast-check'
import {
  actionsOf,
  describeAbortRuns,
  routeArb,
  type AbortPropertyOptions,
  type AbortTransport,
  type Exchange,
} from './abort-property.js'
import { roundTrip, send, type Http2Serve } from './http2.js'

/** Sessions a plan's requests are spread over. */
const SESSIONS = 3

const on = fc.nat(SESSIONS - 1)
const http2Actions = actionsOf(
  [
    { weight: 4, arbitrary: fc.record({ send: fc.tuple(routeArb), on }) },
    // Several streams at once on one session: HTTP/2's pipelining, answered in any order.
    {
      weight: 2,
      arbitrary: fc.record({ send: fc.array(routeArb, { minLength: 2, maxLength: 4 }), on }),
    },
    // Reset as soon as sent: the server sees the stream and its reset together, or neither.
    {
      weight: 1,
      arbitrary: fc.record({ send: fc.tuple(routeArb), on, leaveAtOnce: fc.constant(true) }),
    },
  ],
  [
    { weight: 3, arbitrary: fc.record({ leave: fc.nat(7) }) },
    // The whole session goes, with whatever streams it still has open.
    { weight: 1, arbitrary: fc.record({ leave: fc.nat(7), whole: fc.constant(true) }) },
  ],
)

/**
 * HTTP/2 through an h2c app: requests on up to three sessions, a stream each; a client leaves
 * one request by resetting its stream (`NGHTTP2_CANCEL`), or all of a session's by destroying
 * the session.
 */
function http2Transport(name: string, serve: Http2Serve): AbortTransport {
  return {
    name: `${name} on HTTP/2 (h2c)`,
    actions: http2Actions,
    examples: [
      // Found by this property: a session destroyed while two handlers held the slots and a
      // third stream had its 429 (Node resets the open streams with NO_ERROR).
      [
        { send: ['c', 'c', 'c'], on: 0 },
        { leave: 0, whole: true },
      ],
      // Found by this property: a stream reset as soon as sent, whose request the server read
      // with the connection's peer already gone, was decided with no address (a shared key).
      [{ send: ['c'], on: 0, leaveAtOnce: true }],
      // Found by this property: the session closed while the store held its answer, and
      // `onDecision`'s facts then read no address for the client decided (Fastify).
      [{ send: ['c'], on: 0, leaveAtOnce: true }, { turns: 3 }, { deliver: 0 }],
    ],
    async start(limiter, enter) {
      const errors: unknown[] = []
      const serverSessions = new Set<Http2Session>()
      const app = await serve(
        limiter,
        (path, req) => {
          if (req === undefined) {
            throw new Error('describeHttp2AbortProperty: serve must pass the request to enter')
          }
          const stream = req.stream
          if (stream.session) serverSessions.add(stream.session)
          return enter(path === '/c' ? 'c' : 'q', {
            gone: () => stream.destroyed || stream.closed,
            // A stream reset with NO_ERROR is closed, and its request side ends, before 'close'.
            onGone: (f) => {
              stream.once('close', f)
              stream.once('end', () => stream.closed && f())
            },
          })
        },
        errors,
      )
      const sessions: Array<{ session: ClientHttp2Session; id: number } | undefined> = []
      const opened: ClientHttp2Session[] = []
      const sessionOn = (i: number) => {
        const current = sessions[i]
        if (current && !current.session.destroyed && !current.session.closed) return current
        const session = connect(`http://127.0.0.1:${app.port}`)
        session.on('error', () => {})
        opened.push(session)
        const fresh = { session, id: opened.length }
        sessions[i] = fresh
        return fresh
      }
      return {
        errors,
        send(routes, i) {
          const { session, id } = sessionOn(i % SESSIONS)
          const streams = routes.map((route) => send(session, `/${route}`))
          // After the streams' HEADERS: back once the server has read them.
          const arrived = roundTrip(session).catch(() => {})
          return routes.map((route, k): Exchange => ({
            routes: [route],
            connection: id,
            leave: () => void streams[k]!.stream.close(constants.NGHTTP2_CANCEL),
            leaveConnection: () => void session.destroy(),
            arrived,
            done: streams[k]!.answer.then((a) => [a.status ?? 'dropped']),
          }))
        },
        async close() {
          for (const session of opened) session.destroy()
          // Node keeps a stream its client reset with NO_ERROR open while the handler's response
          // is unfinished, and the server waits for it on close: end those sessions first.
          for (const session of serverSessions) session.destroy()
          await app.close()
        },
      }
    },
  }
}

/**
 * The property of {@link describeAbortProperty} over HTTP/2: the same routes, rules, model and
 * invariants, with requests sent as streams over cleartext HTTP/2 sessions (several at once on
 * one session, as HTTP/2 multiplexes them), and clients leaving the HTTP/2 ways: a stream reset
 * (`RST_STREAM` with `CANCEL`) at each moment (as soon as sent, while the store decides, while
 * queued, while the handler runs), or a whole session destroyed with streams still open on it
 * (some queued, some holding a slot). On top of the HTTP/1.1 invariants, the framework reports
 * no error.
 *
 * Express has no HTTP/2 server (see the docs); Fastify and Koa run it with the `serve` they give
 * {@link describeHttp2}, which must pass the request to `enter`.
 *
 * @param name - the adapter, for the test titles
 * @param serve - starts the app on an h2c server
 * @param options - the store, and the number of runs (default 100 per store, or `ABORT_RUNS`)
 */
export function describeHttp2AbortProperty(
  name: string,
  serve: Http2Serve,
  options: AbortPropertyOptions = {},
): void {
  // More plans than on HTTP/1.1 by default: a run is as quick, and the moments are more.
  const runs = options.runs ?? Number(process.env.ABORT_RUNS ?? 100)
  describeAbortRuns(http2Transport(name, serve), { ...options, runs })
}
