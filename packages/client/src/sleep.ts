/** Waits `ms` milliseconds; must settle (reject) soon after `signal` aborts if one is given. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>

// setTimeout fires at once for delays above 2^31 - 1 ms, so long waits are chained.
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * The default {@link Sleep}: a timer that is cleared, and rejects with the signal's reason,
 * when the signal aborts.
 *
 * @param ms - how long to wait
 * @param signal - cancels the wait
 * @returns a promise that resolves after `ms`
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error)
      return
    }
    let left = Math.max(0, ms)
    let timer: NodeJS.Timeout | undefined
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal?.reason as Error)
    }
    const arm = (): void => {
      const step = Math.min(left, MAX_TIMER_MS)
      left -= step
      timer = setTimeout(() => {
        if (left > 0) return arm()
        signal?.removeEventListener('abort', onAbort)
        resolve()
      }, step)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    arm()
  })
}
