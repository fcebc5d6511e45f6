import type { HeaderBag } from '../request-facts.js'
import type { WarnOnce } from './warn-once.js'

/** How much of X-Forwarded-For the framework believes, as read from its own setting. */
export type ProxyTrust = 'none' | 'some' | 'all'

/**
 * The per-request proxy checks every adapter runs, each warning once and then costing one
 * boolean test per request:
 *
 * - the framework trusts every proxy (`FG_WRN_TRUST_PROXY_ALL`): a client writes its own address;
 * - a request carries `X-Forwarded-For` while no proxy is trusted (`FG_WRN_FORWARDED_UNTRUSTED`):
 *   the app probably sits behind a proxy, and every client shares the proxy's address.
 *
 * @param warn - the mount's warner
 * @param setting - how the framework's setting is spelled, for the messages (`app.set('trust proxy')`)
 * @param remedy - what to set instead, in the framework's terms
 * @returns a check of one request, given the trust its framework reports now
 */
export function proxyWarnings(
  warn: WarnOnce,
  setting: string,
  remedy: string,
): (trust: ProxyTrust, headers: HeaderBag) => void {
  let trustAllSeen = false
  let forwardedSeen = false
  return (trust, headers) => {
    if (trust === 'all') {
      if (trustAllSeen) return
      trustAllSeen = true
      warn(
        'FG_WRN_TRUST_PROXY_ALL',
        `${setting} trusts every proxy, so the client address is the leftmost X-Forwarded-For entry, which the client writes itself; ${remedy}`,
      )
    } else if (trust === 'none' && !forwardedSeen && headers['x-forwarded-for'] !== undefined) {
      forwardedSeen = true
      warn(
        'FG_WRN_FORWARDED_UNTRUSTED',
        `a request carried X-Forwarded-For but ${setting} trusts no proxy: if the app runs behind a proxy, every client shares the proxy's address and one quota; ${remedy}`,
      )
    }
  }
}

/**
 * The warning for a request with no client address on a connection still open (an app on a
 * Unix socket, or a proxy setting that resolves no address): every such request is keyed alike,
 * so rules keyed by `ip` put all of them in one shared bucket. Warns once
 * (`FG_WRN_KEY_MISSING`). `enforce` calls it (as `HttpIo.missingAddress`) only for a socket that
 * tells no address and whose client is not gone (see `clientGone`).
 *
 * @param warn - the mount's warner
 * @param setting - how the framework's proxy setting is spelled, for the message
 * @returns a check of one request's facts (whose `ip` is the address the framework resolved,
 *   from X-Forwarded-For when the socket's peer is a trusted proxy)
 */
export function missingAddressWarning(
  warn: WarnOnce,
  setting: string,
): (facts: { readonly ip?: string | undefined }) => void {
  let seen = false
  return (facts) => {
    if (seen || facts.ip) return
    seen = true
    warn(
      'FG_WRN_KEY_MISSING',
      `a request came with no client address (the app listens on a Unix socket, or ${setting} resolved none), so rules keyed by ip put every such request in one shared bucket; behind a proxy, trust it so the framework reads the client address from X-Forwarded-For`,
    )
  }
}
