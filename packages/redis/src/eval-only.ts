/**
 * Clients whose Redis refused EVALSHA: renamed away or disabled in its redis.conf
 * (`rename-command EVALSHA ""`), or not granted to the ACL user (NOPERM). Their scripts go as
 * EVAL, which carries the whole script on every call but needs nothing else; without this every
 * call after a connection's first would fail, and every request pass unjudged for good.
 * Kept per client (a Cluster's nodes share one configuration), for the life of the client.
 */
const evalOnly = new WeakSet<object>()

/**
 * Whether `err` is Redis refusing to run EVALSHA at all: an unknown command, or one the user
 * may not run. The script did not run, so sending it again as EVAL counts nothing twice.
 */
export function refusesEvalsha(err: unknown): boolean {
  return (
    err instanceof Error &&
    /^(ERR unknown command|NOPERM)[^\r\n]*['`]evalsha['`]/i.test(err.message)
  )
}

/** From now on, send this client's scripts as EVAL. */
export function useEvalOnly(client: object): void {
  evalOnly.add(client)
}

/** Whether this client's scripts go as EVAL (its Redis refused EVALSHA). */
export function isEvalOnly(client: object): boolean {
  return evalOnly.has(client)
}
