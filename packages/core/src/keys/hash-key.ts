import { createHash } from 'node:crypto'

/** Keys longer than this are replaced by a hash, so a huge header cannot bloat the store. */
export const MAX_KEY_LENGTH = 128

/**
 * First character of every key core makes up itself (a hash, a fallback key). A raw key that
 * starts with it is escaped by doubling it, so no raw key can equal a made-up one.
 */
export const KEY_MARKER = '\u0000'

/** Second character after {@link KEY_MARKER} of a hashed long key. */
const HASHED = `${KEY_MARKER}#`

/**
 * Turn a raw client key into its stored form, injectively:
 *
 * - a key up to {@link MAX_KEY_LENGTH} characters that does not start with `\u0000` is
 *   stored unchanged (no work on the hot path);
 * - a short key that starts with `\u0000` is stored with one more `\u0000` in front;
 * - a longer key becomes `\u0000#` + a base64url SHA-256 prefix (128 bits).
 *
 * Core's own keys (`\u0000ip:…`, `\u0000shared`) start with `\u0000` and a letter, so raw,
 * hashed and fallback keys live in disjoint spaces: no client can pick a raw key that shares
 * another client's counters.
 *
 * @param key - The raw key (an IP, a header value, a builder's output, or parts joined).
 * @returns The stored key, at most `MAX_KEY_LENGTH + 1` characters.
 */
export function boundKey(key: string): string {
  if (key.length > MAX_KEY_LENGTH) {
    return HASHED + createHash('sha256').update(key).digest('base64url').slice(0, 22)
  }
  return key.charCodeAt(0) === 0 ? KEY_MARKER + key : key
}
