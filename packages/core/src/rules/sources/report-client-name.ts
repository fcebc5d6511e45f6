import { createHash } from 'node:crypto'

/** The longest client name the rules service takes in a report. */
export const MAX_CLIENT_NAME = 256

// What the service refuses in a name: control characters and lone surrogates.
// eslint-disable-next-line no-control-regex -- control characters are what is escaped
const UNPRINTABLE = /[\u0000-\u001f\u007f]|\p{Cs}/u

/**
 * How a report names a client shown in clear (`topClients: { clearKeys: true }`), so that
 * every name is one the service takes and distinct names stay distinct. Keys core makes up
 * start with a NUL (an address a missing header fell back to, a long key's hash), and a key
 * builder may return control characters; the service refuses those, and a refused report
 * is refused whole, so the host's counts would never reach the fleet view.
 *
 * - a printable name that does not start with `"` is sent as it is;
 * - any other is sent as its JSON string, quotes included (`"\u0000ip:203.0.113.7"`), so an
 *   escaped name (it starts with `"`) never equals one sent as it is;
 * - an escaped name longer than the service takes (a key of many control characters) is sent
 *   as `sha256:` and 16 hex digits of its SHA-256, the form hashed names have.
 *
 * @param name - the client as `limiter.topClients()` shows it
 * @returns the name to report
 */
export function reportClientName(name: string): string {
  if (name.length <= MAX_CLIENT_NAME && name.charCodeAt(0) !== 0x22 && !UNPRINTABLE.test(name)) {
    return name
  }
  // JSON leaves DEL as it is; escaped too, it still reads back as the name.
  const escaped = JSON.stringify(name).replace(/\u007f/g, '\\u007f')
  if (escaped.length <= MAX_CLIENT_NAME) return escaped
  return `sha256:${createHash('sha256').update(escaped).digest('hex').slice(0, 16)}`
}
