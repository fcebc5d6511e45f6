import type { RateLimitInfo } from '@floodgate/core/http'
import type { Request } from 'express'

// Why not a plain `req.rateLimit = info`: Express swaps the prototype of every request, and V8
// records no transitions from a map made by a prototype swap, so each property added to a
// request afterwards builds a new hidden class (its whole descriptor array copied), and every
// later read of the request by the router, the handler and Express itself misses its inline
// caches again. Instead `rateLimit` is an accessor on Express's shared request prototype (the
// one every app's and sub-app's `app.request` inherits from), and the values live in a WeakMap
// keyed by the request, which changes nothing on the request itself.

/** Where the accessor keeps its values: one map per process, shared by the ESM and CJS builds. */
const STORE_KEY = Symbol.for('floodgate.express.rate-limit-info')
const infos: WeakMap<object, unknown> = ((globalThis as Record<symbol, unknown>)[STORE_KEY] ??=
  new WeakMap<object, unknown>()) as WeakMap<object, unknown>

function get(this: object): unknown {
  return infos.get(this)
}
// Marks the getter as one that reads `infos`, for another copy of this package to recognise.
Object.defineProperty(get, STORE_KEY, { value: infos })

const accessor: PropertyDescriptor = {
  configurable: true,
  enumerable: false,
  get,
  // Anyone's assignment (express-rate-limit writes `req.rateLimit` too) goes to the same place,
  // so the last writer wins, as with a plain property.
  set(this: object, value: unknown): void {
    infos.set(this, value)
  },
}

/** True when `base` has (now) an accessor that reads `infos`; false when it has another. */
function withAccessor(base: object): boolean {
  const own = Object.getOwnPropertyDescriptor(base, 'rateLimit')
  if (own === undefined) {
    Object.defineProperty(base, 'rateLimit', accessor)
    return true
  }
  return (own.get as { [STORE_KEY]?: unknown } | undefined)?.[STORE_KEY] === infos
}

const ready = new WeakSet<object>()
let lastProto: object | null = null

/**
 * Whether requests with this prototype read `rateLimit` through the accessor: Express's
 * `app.request` (it has its own `app`), whose prototype is Express's shared request object.
 */
function accessorReady(proto: object | null): boolean {
  if (proto === null) return false
  if (ready.has(proto)) return true
  if (!Object.hasOwn(proto, 'app')) return false
  const base = Object.getPrototypeOf(proto) as object | null
  if (base === null || !withAccessor(base)) return false
  ready.add(proto)
  return true
}

/**
 * Hand the decision to the handlers as `req.rateLimit` without adding a property to the
 * request (see above). A request outside Express's prototypes (a bare router), or one that
 * got its own `rateLimit` property before the accessor existed, gets a plain property.
 *
 * @param req - the request
 * @param info - the decision as handlers read it
 */
export function attachInfo(req: Request, info: RateLimitInfo): void {
  const proto = Object.getPrototypeOf(req) as object | null
  if (proto === lastProto || accessorReady(proto)) {
    lastProto = proto
    if (!Object.hasOwn(req, 'rateLimit')) {
      infos.set(req, info)
      return
    }
  }
  req.rateLimit = info
}
