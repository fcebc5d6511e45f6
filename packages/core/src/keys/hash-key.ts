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
  if (key.length > MAX_KEY_LENGTH) return HASHED + keyDigest(key)
  return key.charCodeAt(0) === 0 ? KEY_MARKER + key : key
}

// A lone surrogate: a code point of category Cs, which a well-formed string never holds.
const LONE_SURROGATE = /\p{Cs}/u
const ILL_FORMED = new Uint8Array([0xff])

/**
 * 22 base64url characters (132 bits) of a key's SHA-256, distinct for distinct keys (up to a
 * collision), lone surrogates included: UTF-8 turns every lone surrogate into U+FFFD, so
 * `'a\uD800'` and `'a\uFFFD'` would hash alike. A key that is not well-formed UTF-16 is hashed
 * as its code units after a 0xFF byte, which UTF-8 never holds; a well-formed key hashes as its
 * UTF-8, as it always has (stored hashes stay where they are).
 *
 * @param key - Any string.
 * @returns The digest, brace-free and of fixed length.
 */
export function keyDigest(key: string): string {
  const hash = createHash('sha256')
  if (LONE_SURROGATE.test(key)) hash.update(ILL_FORMED).update(key, 'utf16le')
  else hash.update(key)
  return hash.digest('base64url').slice(0, 22)
}
