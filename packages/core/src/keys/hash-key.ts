import { createHash } from 'node:crypto'

/** Keys longer than this are replaced by a hash, so a huge header cannot bloat the store (P31). */
export const MAX_KEY_LENGTH = 128

/**
 * Bound a key's length: short keys pass unchanged (no work on the hot path), long ones become
 * `#` + a base64url SHA-256 prefix (128 bits, collision-safe for this purpose).
 */
export function boundKey(key: string): string {
  if (key.length <= MAX_KEY_LENGTH) return key
  return `#${createHash('sha256').update(key).digest('base64url').slice(0, 22)}`
}
