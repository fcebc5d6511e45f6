import { createHash } from 'node:crypto'
import type { RedisClient } from './connection.js'
import { isEvalOnly, refusesEvalsha, useEvalOnly } from './eval-only.js'

/**
 * A Lua script as a command of `client`, defined once per client. ioredis runs it with
 * EVALSHA and falls back to EVAL on NOSCRIPT, so a Redis that restarted empty, a SCRIPT FLUSH,
 * a new Cluster node or a promoted replica reloads it without an error; a Redis that refuses
 * EVALSHA gets EVAL. The command's name
 * carries the script's hash: two Floodgate versions sharing one client never clash.
 *
 * @param client - The ioredis client or Cluster.
 * @param lua - The script.
 * @returns The command, bound to the client: `(numKeys, ...keysThenArgs) => reply`.
 */
export function scriptCommand<Fn extends (numKeys: number, ...args: never[]) => Promise<unknown>>(
  client: RedisClient,
  lua: string,
): Fn {
  const name = `floodgate_${createHash('sha1').update(lua).digest('hex').slice(0, 16)}`
  const target = client as unknown as Record<string, Fn | undefined>
  if (typeof target[name] !== 'function') client.defineCommand(name, { lua })
  const viaSha = (target[name] as Fn).bind(client) as Fn
  const viaEval = (numKeys: number, args: never[]): Promise<unknown> =>
    client.eval(lua, numKeys, ...(args as (string | number)[]))
  // A Redis that refuses EVALSHA (see `eval-only.ts`) did not run the script: once more as
  // EVAL, and EVAL from then on.
  return ((numKeys: number, ...args: never[]) => {
    if (isEvalOnly(client)) return viaEval(numKeys, args)
    return viaSha(numKeys, ...args).catch((err: unknown) => {
      if (!refusesEvalsha(err)) throw err
      useEvalOnly(client)
      return viaEval(numKeys, args)
    })
  }) as Fn
}
