// Uses from @floodgate/core: RateLimitInfo (what handlers read as req.rateLimit).
import type { RateLimitInfo } from '@floodgate/core/http'
import type { Request } from 'express'

/**
 * Where `req.rateLimit` is kept: the response's `res.locals`, under a global symbol (two copies
 * of the adapter, ESM and CJS, share it).
 *
 * Why not a property of `req`: Express swaps each request's prototype to its app's, so every
 * new property on a request is a hidden-class miss that V8 resolves at runtime: about 21,000
 * instructions per request, counted with callgrind (`node bench/http/instructions.mjs`),
 * 4 % of a whole Express response. `res.locals` is a dictionary object, where a new key costs
 * a hash insert; `req.rateLimit` stays readable and writable through an accessor defined once
 * on the app's request prototype.
 */
const INFO: unique symbol = Symbol.for('floodgate.rate-limit-info') as never

type Locals = Record<PropertyKey, unknown>
interface Linked {
  res?: { locals?: Locals }
}

const accessor: PropertyDescriptor = {
  configurable: true,
  enumerable: false,
  get(this: Linked): unknown {
    return this.res?.locals?.[INFO]
  },
  set(this: Linked, value: unknown): void {
    const locals = this.res?.locals
    if (locals !== undefined) locals[INFO] = value
    else Object.defineProperty(this, 'rateLimit', { ...OWN, value })
  },
}
const OWN = { configurable: true, enumerable: true, writable: true } as const

// Whether each request prototype seen reads req.rateLimit through the accessor.
const readsLocals = new WeakMap<object, boolean>()
let lastProto: object | null = null
let lastReads = false

/**
 * Whether requests of this prototype read `rateLimit` from `res.locals`: true once the accessor
 * is on the outermost Express app's request prototype (sub-apps' prototypes inherit from it, so
 * a handler of the parent app after a mounted sub-app reads it too). False for a request that is
 * not an Express app's (no prototype has its own `app`), or when something else already defines
 * `rateLimit` there: such requests get a plain property, as before.
 */
function accessorFor(proto: object): boolean {
  let root: object | undefined
  for (let p: object | null = proto; p !== null; p = Object.getPrototypeOf(p) as object | null) {
    if (Object.hasOwn(p, 'app')) root = p
  }
  if (root === undefined) return false
  const existing = Object.getOwnPropertyDescriptor(root, 'rateLimit')
  if (existing === undefined) Object.defineProperty(root, 'rateLimit', accessor)
  else if (existing.get !== accessor.get) return false
  // A prototype below the root with its own rateLimit would hide the accessor.
  for (let p: object | null = proto; p !== root; p = Object.getPrototypeOf(p) as object | null) {
    if (p === null || Object.hasOwn(p, 'rateLimit')) return false
  }
  return true
}

/**
 * Hand a decision to the request's handlers as `req.rateLimit`.
 *
 * @param req - the request
 * @param locals - its `res.locals`, read once by the middleware
 * @param info - the decision's info
 */
export function attachInfo(req: Request, locals: object, info: RateLimitInfo): void {
  const proto = Object.getPrototypeOf(req) as object | null
  if (proto !== lastProto) {
    let reads = proto === null ? false : readsLocals.get(proto)
    if (reads === undefined) {
      reads = accessorFor(proto!)
      readsLocals.set(proto!, reads)
    }
    lastProto = proto
    lastReads = reads
  }
  // An own property (set before the accessor existed, or by other code) hides the accessor.
  if (lastReads && !Object.hasOwn(req, 'rateLimit')) (locals as Locals)[INFO] = info
  else req.rateLimit = info
}
