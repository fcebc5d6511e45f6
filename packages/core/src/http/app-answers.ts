/**
 * What an application's callback on the request path answered (`skip`, `cost`,
 * `requestWasSuccessful`, `onRejected`), when it is a promise or another thenable. A thenable
 * whose `then` cannot be read (a revoked Proxy) is none. Warier than the engine's `isThenable`
 * for store answers: an app's callback may answer anything, a function with a `then` included,
 * and reading `then` must not throw on the request path.
 *
 * @param answer - the callback's answer
 * @returns whether it is a thenable
 */
export function isPromiseLike(answer: unknown): answer is PromiseLike<unknown> {
  if ((typeof answer !== 'object' && typeof answer !== 'function') || answer === null) return false
  try {
    return typeof (answer as { then?: unknown }).then === 'function'
  } catch {
    return false
  }
}

/**
 * Let a thenable nobody waits for settle unobserved: its rejection is handled, since a rejection
 * nobody handles ends a Node process (`--unhandled-rejections=throw`, Node's default). Used for
 * the answers of callbacks that must be synchronous (`skip`, `cost`, `requestWasSuccessful`):
 * an `async` one that fails must cost a warning, not the server.
 *
 * @param answer - the thenable
 */
export function ignoreSettlement(answer: PromiseLike<unknown>): void {
  try {
    // Promise.resolve adopts any thenable, calling its `then` with handlers of its own.
    Promise.resolve(answer).then(undefined, () => {})
  } catch {
    // A thenable whose `then` throws when read: nothing can settle.
  }
}

/**
 * The answer of the app's refusal handler (`onRejected`), for the adapter to hand on: a thenable
 * (an `async` handler) becomes a native promise that settles with it, so the adapter's error
 * path (Express's `next(err)`, Fastify's `done(err)`) sees its rejection and answers 500, as
 * for a handler that throws; anything else is undefined.
 *
 * @param answer - what `onRejected` returned
 * @returns a promise of its settlement, or undefined for a synchronous handler
 * @example
 * reject: (c, rejection) => handlerAnswer(onRejected(c.req, c.res, c.next, rejection))
 */
export function handlerAnswer(answer: unknown): Promise<void> | undefined {
  if (!isPromiseLike(answer)) return undefined
  return Promise.resolve(answer).then(() => undefined)
}
