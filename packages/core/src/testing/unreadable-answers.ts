/** A value that throws whatever is asked of it: every property, `in`, keys, prototype. */
function booby(target: object): object {
  const trap = (): never => {
    throw new Error('read boom')
  }
  return new Proxy(target, {
    get: trap,
    has: trap,
    ownKeys: trap,
    getOwnPropertyDescriptor: trap,
    getPrototypeOf: trap,
  })
}

/** The name of one answer in {@link UNREADABLE_ANSWERS}. */
export type UnreadableAnswer =
  'proxy-answer' | 'proxy-array' | 'proxy-results' | 'throwing-verdict' | 'throwing-wait'

/**
 * Store answers that look like results but throw when read, each made afresh for `n` entries
 * (an answer of the wrong length is refused before any result in it is read, so the length
 * must be right for the reading to be tested at all).
 */
export const UNREADABLE_ANSWERS: Readonly<Record<UnreadableAnswer, (n: number) => unknown>> = {
  'proxy-answer': () => booby({}),
  // Array.isArray sees through a Proxy: it passes that test, then its length throws.
  'proxy-array': (n: number) => booby(new Array<number>(n).fill(0)),
  'proxy-results': (n: number) => Array.from({ length: n }, () => booby({})),
  'throwing-verdict': (n: number) =>
    Array.from({ length: n }, () => ({
      get allowed(): boolean {
        throw new Error('getter boom')
      },
    })),
  'throwing-wait': (n: number) =>
    Array.from({ length: n }, () => ({
      allowed: true,
      limit: 5,
      remaining: 4,
      resetMs: 0,
      retryAfterMs: 0,
      get waitMs(): number {
        throw new Error('getter boom')
      },
    })),
}

/** Every name in {@link UNREADABLE_ANSWERS}. */
export const UNREADABLE_KINDS: readonly UnreadableAnswer[] = Object.keys(
  UNREADABLE_ANSWERS,
) as UnreadableAnswer[]
