import { afterEach, describe, expect, it } from 'vitest'
import { createLimiter } from '../limiter.js'
import type { Limiter } from '../limiter-types.js'
import type { KeyBuilders } from '../keys/build-key.js'
import type { Logger } from '../logger.js'
import type { RuleInput } from '../rules/schema.js'

/**
 * Starts the adapter's server with `limiter` mounted app-wide and `GET /items` answering 200,
 * on a real loopback socket. Resolves with the server's base URL (`http://127.0.0.1:port`) and
 * how to close it.
 */
export type ClientChosenKeysServe = (
  limiter: Limiter<never>,
) => Promise<{ readonly url: string; readonly close: () => Promise<void> }>

/** What the builders read: the framework's request (or context) with its query and headers. */
interface Readable {
  readonly query: Readonly<Record<string, unknown>>
  readonly headers: Readonly<Record<string, unknown>>
}

/** A bearer token's `sub`, decoded as many apps do; throws on a token that is not one. */
function subOf(authorization: unknown): string {
  const payload = String(authorization)
    .replace(/^Bearer /, '')
    .split('.')[1]!
  return (JSON.parse(Buffer.from(payload, 'base64url').toString()) as { sub: string }).sub
}

const token = (sub: string): string =>
  `Bearer e30.${Buffer.from(JSON.stringify({ sub })).toString('base64url')}.sig`

/**
 * The cases where a client chooses what a key builder meets, through the adapter's real
 * framework over real HTTP: `?key=a&key=b` makes the framework's `query.key` an array, and a
 * garbage bearer token makes decoding it throw. Either way the request must be limited under
 * the rule's fallback (the client's IP), never pass unjudged and never be answered with a 500,
 * and the failure is logged once.
 *
 * @param name - the adapter, for the test titles
 * @param serve - starts the adapter's server for one case
 */
export function describeClientChosenKeys(name: string, serve: ClientChosenKeysServe): void {
  describe(`${name}: key builders fed by the client`, () => {
    const closers: Array<() => Promise<void>> = []
    afterEach(async () => {
      await Promise.all(closers.splice(0).map((close) => close()))
    })

    async function start(rule: RuleInput, keys: KeyBuilders<Readable>) {
      const codes: unknown[] = []
      const logger: Logger = {
        debug: () => {},
        info: () => {},
        warn: (obj) => void codes.push((obj as { code?: unknown }).code),
        error: () => {},
      }
      const limiter = createLimiter<never>({
        rules: [rule],
        keys,
        logger,
        clock: () => 1_000,
      })
      const server = await serve(limiter)
      closers.push(async () => {
        await server.close()
        await limiter.close()
      })
      const get = async (query: string, headers: Record<string, string> = {}) =>
        (await fetch(`${server.url}/items${query}`, { headers })).status
      return { get, codes, limiter }
    }

    it('?key=a&key=b (an array where the builder expects a string) is limited by IP', async () => {
      const { get, codes, limiter } = await start(
        { id: 'per-key', key: 'custom:apiKey', limit: 2, window: '1m' },
        { apiKey: (req) => req.query.key as string },
      )
      const statuses: number[] = []
      for (let i = 0; i < 4; i++) statuses.push(await get('?key=a&key=b'))
      expect(statuses).toEqual([200, 200, 429, 429])
      // A client with a key of its own is its own client.
      expect(await get('?key=c')).toBe(200)
      expect(codes).toEqual(['FG_WRN_KEY_BUILDER_FAILED'])
      expect(limiter.counters().total.failedOpen).toBe(0)
    })

    it('a garbage token (the builder throws) is limited by IP', async () => {
      const { get, codes, limiter } = await start(
        { id: 'per-user', key: 'user', limit: 2, window: '1m' },
        { user: (req) => subOf(req.headers.authorization) },
      )
      const garbage = { authorization: 'Bearer not-a-token' }
      const statuses: number[] = []
      for (let i = 0; i < 3; i++) statuses.push(await get('', garbage))
      expect(statuses).toEqual([200, 200, 429])
      expect(await get('', { authorization: token('alice') })).toBe(200)
      expect(codes).toEqual(['FG_WRN_KEY_BUILDER_FAILED'])
      expect(limiter.counters().total.failedOpen).toBe(0)
    })
  })
}
