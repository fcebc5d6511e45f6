import type Koa from 'koa'

/**
 * The property under which Koa's own `request.ip` keeps the address (its setter writes it, and
 * its getter fills it the first time it runs), when this app's `ctx.request.ip` is Koa's own
 * accessor and behaves as Koa's does; undefined otherwise.
 *
 * Why: without `app.proxy`, Koa's getter still looks `X-Forwarded-For` up (lower-casing the name
 * and reading the headers with a fresh string key each time) before it falls back to the socket's
 * address, about 1k instructions per request (callgrind). With this key, `KoaFacts.ip` reads the
 * cached value, as Koa's getter would, and else the socket's address, which is what the getter
 * answers without a proxy.
 *
 * Checked on objects made for the purpose, never on a request: the accessor must be the one Koa
 * defines on its request prototype (not redefined on `app.request`), its setter must keep the
 * value under exactly one symbol, which the getter answers, and without a proxy the getter must
 * answer the socket's address even when `X-Forwarded-For` is set. Anything else (an app that
 * redefines `ip`, another Koa with other internals) gets undefined, and Koa's getter is read on
 * every request as before.
 *
 * @param app - the Koa application
 * @returns the key of Koa's cached address, or undefined to read `ctx.request.ip`
 */
export function koaIpCache(app: Koa): symbol | undefined {
  try {
    const appRequest: object = app.request
    if (Object.prototype.hasOwnProperty.call(appRequest, 'ip')) return undefined
    const koaRequest = Object.getPrototypeOf(appRequest) as object | null
    if (koaRequest === null) return undefined
    const accessor = Object.getOwnPropertyDescriptor(koaRequest, 'ip')
    if (accessor?.get === undefined || accessor.set === undefined) return undefined

    const marker = 'floodgate:ip-probe'
    const set = Object.create(appRequest) as Record<PropertyKey, unknown>
    set.ip = marker
    const keys = Reflect.ownKeys(set)
    const key = keys[0]
    if (keys.length !== 1 || typeof key !== 'symbol' || set[key] !== marker) return undefined
    if (set.ip !== marker) return undefined

    // Uncached, no proxy: the socket's address, whatever X-Forwarded-For says.
    const fresh = Object.create(appRequest) as Record<PropertyKey, unknown>
    fresh.app = { proxy: false, proxyIpHeader: 'X-Forwarded-For', maxIpsCount: 0 }
    fresh.req = {
      headers: { 'x-forwarded-for': '192.0.2.1' },
      socket: { remoteAddress: '192.0.2.2' },
    }
    if (fresh.ip !== '192.0.2.2') return undefined
    return key
  } catch {
    return undefined
  }
}
