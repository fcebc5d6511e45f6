import { afterAll, beforeAll } from 'vitest'

/**
 * Collects the promise rejections nobody handled while the enclosing `describe` runs (an
 * unhandled rejection ends a Node server). Call inside a `describe`; assert the returned list
 * is empty after each case.
 */
export function collectUnhandledRejections(): unknown[] {
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason)
  }
  beforeAll(() => {
    process.on('unhandledRejection', onUnhandled)
  })
  afterAll(() => {
    process.off('unhandledRejection', onUnhandled)
  })
  return unhandled
}
