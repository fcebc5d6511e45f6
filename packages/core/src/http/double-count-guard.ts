// A global symbol, so two copies of core (ESM and CJS, or two versions) still see each other's marks.
const CHECKED: unique symbol = Symbol.for('floodgate.checked') as never

interface Marked {
  [CHECKED]?: object | object[]
}

/**
 * The double-count guard (pitfall P13): marks a request as checked by a limiter, and reports
 * whether it already was. A limiter mounted twice on one request path (app and router, a hook
 * registered twice, app-level plus route-level mounts sharing one Limiter) charges once; the
 * first mount to run decides, the later ones pass the request through.
 *
 * Marks live on Node's `IncomingMessage`, which every framework wraps, so the guard works across
 * adapters too (an Express router inside a Koa app is not a thing, but Express under Fastify's
 * middie is).
 *
 * @param req - Node's request
 * @param limiter - the limiter about to check it
 * @returns true when this limiter has already checked the request (skip it), else false (and
 * the request is now marked)
 */
export function alreadyChecked(req: object, limiter: object): boolean {
  const r = req as Marked
  const mark = r[CHECKED]
  if (mark === undefined) {
    r[CHECKED] = limiter
    return false
  }
  if (mark === limiter) return true
  if (Array.isArray(mark)) {
    if (mark.includes(limiter)) return true
    mark.push(limiter)
    return false
  }
  r[CHECKED] = [mark, limiter]
  return false
}
