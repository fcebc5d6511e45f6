/**
 * A value as a 400's message names it: its JSON, cut to 60 characters; `nothing` for a field
 * left out, a function or symbol by its type.
 */
export function showValue(value: unknown): string {
  if (value === undefined) return 'nothing'
  // JSON has no functions or symbols: named by their type.
  const text = JSON.stringify(value) ?? typeof value
  return text.length > 60 ? `${text.slice(0, 57)}...` : text
}
