import { keyDigest } from '@floodgate/core/algorithms'
import { optionError } from '@floodgate/core/options'

/**
 * The Redis Cluster hash tag of a client key: 22 base64url characters of its SHA-256
 * (132 bits). A hash rather than the raw key because the raw key comes from the request: a
 * value containing `{` or `}` (say `}evil`) would otherwise change which part of the Redis
 * key Cluster hashes, scatter one client's rules over several slots (CROSSSLOT → error →
 * fail-open → a bypass chosen by the client). base64url never contains braces, and a fixed
 * length keeps header-sized keys from multiplying Redis memory; no API key or user id is
 * stored in clear in a key name either. Distinct client keys get distinct tags (up to a
 * SHA-256 collision), lone surrogates included.
 *
 * @param clientKey - The key core built for the request (an IP, a user id, a header value).
 * @returns A brace-free tag, the same for every rule of that client key.
 */
export function hashTag(clientKey: string): string {
  return recentOf(clientKey).tag
}

/** A client key's tag, and the Redis key it last went into (the commonest key asked again). */
interface Recent {
  readonly tag: string
  prefix: string
  stateId: string
  key: string
}

// Clients come back: remembering recent tags saves a SHA-256 on most requests, and remembering
// each client's last Redis key saves building it again (and, kept flat, flattening it when it
// is written) on most requests; about 100 bytes more per remembered client.
const RECENT_MAX = 10_000
const recent = new Map<string, Recent>()

function recentOf(clientKey: string): Recent {
  let entry = recent.get(clientKey)
  if (entry === undefined) {
    entry = { tag: keyDigest(clientKey), prefix: '', stateId: '', key: '' }
    // Bounded: a flood of new keys empties the cache instead of growing it.
    if (recent.size >= RECENT_MAX) recent.clear()
    recent.set(clientKey, entry)
  }
  return entry
}

/**
 * The Redis key holding one rule's state for one client: `prefix:{tag}:stateId`. Every rule
 * of one client key shares the tag, hence one Cluster slot, so one script can decide them
 * all. Useful to inspect or delete a client's state by hand (`redis-cli GET …`).
 *
 * @param prefix - The store's key prefix (no braces).
 * @param clientKey - The client key the rule was keyed by.
 * @param stateId - The compiled rule's `stateId`.
 * @returns The Redis key.
 * @example
 * ```ts
 * redisKey('fg', '203.0.113.7', rule.stateId) // 'fg:{X3q…}:api|token-bucket|…'
 * ```
 */
export function redisKey(prefix: string, clientKey: string, stateId: string): string {
  const entry = recentOf(clientKey)
  if (entry.stateId !== stateId || entry.prefix !== prefix || entry.key === '') {
    entry.key = `${prefix}:{${entry.tag}}:${stateId}`
    entry.prefix = prefix
    entry.stateId = stateId
  }
  return entry.key
}

/**
 * Check a store's key prefix: braces would change which part of a key Cluster hashes.
 *
 * @param prefix - The prefix given, or undefined for the default `fg`.
 * @returns The prefix to use.
 * @throws OptionsError when it is not a string or contains `{` or `}`.
 */
export function checkPrefix(prefix: unknown = 'fg'): string {
  if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
    throw optionError('prefix', "a string without '{' or '}'", prefix)
  }
  return prefix
}
