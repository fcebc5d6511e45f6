// The registry hangs off a global symbol, so two copies of core (ESM and CJS builds, or two
// versions) still see each other's marks.
const REGISTRY = Symbol.for('floodgate.double-count-guard')

type Registry = WeakMap<object, WeakSet<object>>

function registry(): Registry {
  const g = globalThis as { [REGISTRY]?: Registry }
  return (g[REGISTRY] ??= new WeakMap())
}

/**
 * The double-count guard (pitfall P13) for one limiter: reports whether the limiter already
 * checked a request, and marks it. A limiter mounted twice on one request path (app and router,
 * a hook registered twice, app-level plus route-level mounts sharing one Limiter) charges once;
 * the first mount to run decides, later ones pass the request through.
 *
 * Marks are kept in a WeakSet per limiter keyed by Node's `IncomingMessage`, which every
 * framework wraps: no property is added to the request (that would cost a hidden-class change
 * on every request), and nothing outlives the request.
 *
 * @param limiter - the limiter a mount uses
 * @returns a function: true when the request was already checked by this limiter (skip it);
 * false when not, and the request is now marked
 * @example
 * const seen = doubleCountGuard(limiter)
 * if (seen(req)) return next()
 */
export function doubleCountGuard(limiter: object): (req: object) => boolean {
  const reg = registry()
  let set = reg.get(limiter)
  if (!set) {
    set = new WeakSet()
    reg.set(limiter, set)
  }
  const marks = set
  return (req) => {
    if (marks.has(req)) return true
    marks.add(req)
    return false
  }
}
