import { afterAll, afterEach, beforeAll, expect } from 'vitest'
import type { RunningApp } from './scenario-types.js'

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

/** The app the running test of a block started, if it is still up. */
export interface StartedApp {
  app: Pick<RunningApp, 'close'> | undefined
}

/**
 * For a describe block whose tests start an app each: after every test the app left in
 * `app` is closed, and the test fails if a promise rejection went unhandled meanwhile (an
 * unhandled rejection ends a Node server).
 *
 * @returns the holder tests put their app in (and clear once they closed it themselves)
 */
export function closesAppAfterEach(): StartedApp {
  const started: StartedApp = { app: undefined }
  const unhandled = collectUnhandledRejections()
  afterEach(async () => {
    await started.app?.close()
    started.app = undefined
    expect(unhandled, 'unhandled rejections').toEqual([])
  })
  return started
}
