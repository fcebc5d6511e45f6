import { createHash } from 'node:crypto'
import type { RedisClient } from './connection.js'

/**
 * A Lua script as a command of `client`, defined once per client. ioredis runs it with
 * EVALSHA and falls back to EVAL on NOSCRIPT, so a Redis that restarted empty, a SCRIPT FLUSH,
 * a new Cluster node or a promoted replica reloads it without an error. The command's name
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
  return (target[name] as Fn).bind(client) as Fn
}
