/**
 * The property a request's holder object carries once a limiter checked the request. A global
 * symbol, so two copies of core (ESM and CJS builds) see each other's marks.
 */
export const CHECKED_BY: unique symbol = Symbol.for('floodgate.checked-by') as never

interface Marked {
  [CHECKED_BY]?: object | object[] | null
}

/**
 * The double-count guard (docs/security.md#double-counting-by-mounting) for one limiter: reports whether the limiter already
 * checked a request, and marks it. A limiter mounted twice on one request path (app and router,
 * a plugin registered twice, app-level plus route-level mounts sharing one Limiter) charges
 * once; the first mount to run decides, later ones pass the request through.
 *
 * The mark goes on a per-request object the adapter picks for speed: Express's `res.locals`
 * (a dictionary object, so no hidden-class change) and Koa's `ctx`. Node's `IncomingMessage` is
 * a poor holder: Express swaps its prototype, and a new property on it costs microseconds; a
 * WeakSet of requests burdens the garbage collector. (Fastify needs no per-request mark: its
 * plugin refuses, at startup, to add a second hook of one limiter to a route.)
 *
 * @param limiter - the limiter a mount uses
 * @returns a function of the holder: true when this limiter already checked the request (skip
 * it); false when not, and the request is now marked
 * @example
 * const seen = doubleCountGuard(limiter)
 * if (seen(res.locals)) return next()
 */
export function doubleCountGuard(limiter: object): (holder: object) => boolean {
  return (holder) => {
    const h = holder as Marked
    const mark = h[CHECKED_BY]
    if (mark === undefined || mark === null) {
      h[CHECKED_BY] = limiter
      return false
    }
    if (mark === limiter) return true
    if (Array.isArray(mark)) {
      if (mark.includes(limiter)) return true
      mark.push(limiter)
      return false
    }
    h[CHECKED_BY] = [mark, limiter]
    return false
  }
}
