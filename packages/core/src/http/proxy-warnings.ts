import type { HeaderBag } from '../request-facts.js'
import { clientGone, type ConnectionSocket } from './client-gone.js'
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
 * The per-request check for a request with no client address (an app on a Unix socket, or a
 * proxy setting that resolves no address): every such request is keyed alike, so rules keyed
 * by `ip` put all of them in one shared bucket. Warns once (`FG_WRN_KEY_MISSING`); a request
 * whose socket has an address costs one property read.
 *
 * @param warn - the mount's warner
 * @param setting - how the framework's proxy setting is spelled, for the message
 * @returns a check of one request: its socket, and its facts (whose `ip` is the address the
 *   framework resolved, read only when the socket has none)
 */
export function missingAddressWarning(
  warn: WarnOnce,
  setting: string,
): (socket: ConnectionSocket | undefined, facts: { readonly ip?: string | undefined }) => void {
  let seen = false
  return (socket, facts) => {
    // The frameworks resolve an address from the socket's, or from X-Forwarded-For when the
    // socket's peer is a trusted proxy: with a socket address there is always one. A client
    // already gone has none to read either, and is not checked (see clientGone).
    if (seen || socket?.remoteAddress !== undefined || clientGone(socket) || facts.ip) return
    seen = true
    warn(
      'FG_WRN_KEY_MISSING',
      `a request came with no client address (the app listens on a Unix socket, or ${setting} resolved none), so rules keyed by ip put every such request in one shared bucket; behind a proxy, trust it so the framework reads the client address from X-Forwarded-For`,
    )
  }
}
