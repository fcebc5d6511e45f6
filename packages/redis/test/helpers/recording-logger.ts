import type { Logger } from '@floodgate/core'

/**
 * A logger that keeps every warning and error as one line: the message, then its fields as
 * JSON with each Error as its message.
 */
export function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = []
  const keep = (obj: object, msg?: string): void => {
    lines.push(
      `${msg ?? ''} ${JSON.stringify(obj, (_k, v: unknown) => (v instanceof Error ? v.message : v))}`,
    )
  }
  return { lines, debug: () => {}, info: () => {}, warn: keep, error: keep }
}
