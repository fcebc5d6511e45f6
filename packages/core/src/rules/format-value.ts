/**
 * Renders a received value for an error message: strings quoted, numbers as written,
 * objects as short JSON. Long values are cut so that a huge payload cannot flood a log line.
 */
export function formatValue(value: unknown, max = 60): string {
  if (value === undefined) return 'nothing'
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
    return String(value)
  }
  let text: string
  try {
    text =
      typeof value === 'function'
        ? 'a function'
        : (JSON.stringify(value) ?? Object.prototype.toString.call(value))
  } catch {
    text = Object.prototype.toString.call(value)
  }
  return text.length > max ? `${text.slice(0, max)}…` : text
}
