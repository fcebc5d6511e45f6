/**
 * The one place a request target becomes the path rules are matched on. Two spellings of one
 * resource must meet the same rules, whatever the framework routes on: Express and Koa route
 * an absolute-form target (`http://x/login`) as `/login`, and Fastify routes `/%6Cogin` as
 * `/login` and `/a%21b` as `/a!b`; every framework decodes `/users/%6De` to the parameter
 * `me` and `/users/%40me` to `@me`.
 *
 * The canonical form (each character in one spelling, applied to the path only):
 *
 * 1. An absolute-form target (`scheme://authority/path`) loses its scheme and authority; an
 *    empty path is `/`.
 * 2. The query string and fragment are cut off.
 * 3. A percent-encoded printable ASCII character other than `/ ? # %` is decoded: `%6D` is
 *    `m`, `%40` is `@`, `%3A` is `:`. Unlike RFC 3986 §6.2.2, which keeps reserved characters
 *    encoded, this reads them as the frameworks do: a parameter gets `@me` from both spellings.
 * 4. `%2F`, `%3F`, `%23` and `%25` stay encoded, as does every encoding of a space, a control
 *    or a non-ASCII byte, hex digits upper-cased: `%2f` is `%2F`, so an encoded slash never
 *    splits a segment, and `%c3%a9` is `%C3%A9`.
 * 5. A character that should have been encoded (a space, a non-ASCII letter) is encoded as
 *    UTF-8, so a rule written `/café` and the target `/caf%C3%A9` agree.
 *
 * Case, repeated slashes, a trailing slash and dot segments are left as sent: the rule matcher
 * compares segments case-insensitively and skips empty segments, and matches a path with dot
 * segments or an encoded slash under each reading a file server or a wildcard parameter gives
 * it too (`pathReadings`: `%2F` as `/`, dot segments resolved).
 */

const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/

// Whether an encoded byte is read as its character: printable ASCII, but for the four whose
// encoding means something else than the character would (a segment, query, fragment or escape).
function decodes(c: number): boolean {
  return c > 32 && c < 127 && c !== 47 /* / */ && c !== 63 /* ? */ && c !== 35 /* # */ && c !== 37
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48
  if (c >= 65 && c <= 70) return c - 55
  if (c >= 97 && c <= 102) return c - 87
  return -1
}

/**
 * The canonical path of a request target (see the module comment for the exact rules).
 * Already-canonical paths, the common case, are returned as they are after one scan.
 *
 * @param target - the request target as received (`req.url`), or a path
 * @returns the canonical path, without query string; `/` for an empty path
 * @example
 * canonicalPath('http://x/users/%6De?a=1') // '/users/me'
 */
export function canonicalPath(target: string): string {
  // Fast path: an origin-form path of plain characters, maybe followed by a query string.
  if (target.charCodeAt(0) === 47 /* / */) {
    for (let i = 1; i < target.length; i++) {
      const c = target.charCodeAt(i)
      if (c === 63 /* ? */ || c === 35 /* # */) return target.slice(0, i)
      // '%', controls and space, DEL and non-ASCII need the slow path.
      if (c === 37 || c <= 32 || c >= 127) return respell(target)
    }
    return target
  }
  return respell(target)
}

function respell(target: string): string {
  let path = target
  if (path.charCodeAt(0) !== 47) {
    const m = ABSOLUTE_FORM.exec(path)
    if (m) path = path.slice(m[0].length)
  }
  let end = path.length
  const q = path.indexOf('?')
  if (q !== -1) end = q
  const h = path.indexOf('#')
  if (h !== -1 && h < end) end = h
  if (end !== path.length) path = path.slice(0, end)
  if (path === '') return '/'
  let out = ''
  let from = 0
  for (let i = 0; i < path.length; i++) {
    const c = path.charCodeAt(i)
    if (c === 37 /* % */) {
      const hi = i + 2 < path.length ? hexValue(path.charCodeAt(i + 1)) : -1
      const lo = hi === -1 ? -1 : hexValue(path.charCodeAt(i + 2))
      if (lo === -1) {
        // A lone '%' is not an encoding: encode it, so it cannot pose as one after decoding.
        out += path.slice(from, i) + '%25'
        from = i + 1
        continue
      }
      const byte = hi * 16 + lo
      out +=
        path.slice(from, i) +
        (decodes(byte) ? String.fromCharCode(byte) : '%' + path.slice(i + 1, i + 3).toUpperCase())
      i += 2
      from = i + 1
    } else if (c <= 32 || c === 127 || c >= 128 || c === 35 || c === 63) {
      // Characters a client should have encoded; surrogate pairs are encoded together.
      let j = i + 1
      if (c >= 0xd800 && c <= 0xdbff && j < path.length) j++
      let enc: string
      try {
        enc = encodeURIComponent(path.slice(i, j))
      } catch {
        enc = '%EF%BF%BD' // a lone surrogate: U+FFFD, as a decoder would read it
      }
      out += path.slice(from, i) + enc
      i = j - 1
      from = j
    }
  }
  return from === 0 ? path : out + path.slice(from)
}
