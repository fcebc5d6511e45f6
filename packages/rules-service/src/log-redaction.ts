// Secrets never reach a log line. A refused token is still a secret (it may be a real token of
// another service, or one character off a valid one), and it can arrive in the Authorization
// header, in the query string of a URL that Fastify logs with every request, or inside an
// error message that quotes the URL. Redacting known object paths catches the first only, so
// every finished line is also scrubbed as text before it is written.
import pino, { type DestinationStream, type SerializerFn } from 'pino'

/** What replaces a secret. */
export const REDACTED = '[redacted]'

/** Header paths pino removes before serialising (any log object that carries headers). */
export const REDACTED_PATHS: readonly string[] = [
  'authorization',
  'headers.authorization',
  'headers["proxy-authorization"]',
  'headers.cookie',
  'headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["proxy-authorization"]',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'request.headers.authorization',
]

/**
 * Query parameter names that hold credentials: `token`, `access_token`, `api_key`, `apiKey`,
 * `secret`, `password`, `sig`… Matching a part of the name over-redacts a little (`monkey`),
 * which is harmless; missing one leaks a credential.
 */
export const SECRET_PARAM: RegExp =
  /token|key|secret|passw|pwd|auth|sig|session|jwt|credential|cookie/i

// `?name=value` or `&name=value` (also `;`), in a URL that may sit inside a JSON string: the value
// runs to the next separator or the string's closing quote, and a JSON escape (`\"`) is part of it.
const QUERY_PAIR = /([?&;])((?:\\.|[^=&#;\s"\\])+)=((?:\\.|[^&#;\s"\\])*)/g
// An HTTP credential in a header value or a message: `Bearer xyz`, `Basic xyz`.
const AUTH_SCHEME = /\b(bearer|basic)(\s+)((?:\\.|[^\s"\\,;])+)/gi
// Words that follow "bearer" in prose ("a bearer token", "Bearer …") are not credentials.
const NOT_A_CREDENTIAL = /^(?:token|tokens|…|\.\.\.|\[redacted\])$/i

const decodeName = (name: string): string => {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '))
  } catch {
    return name
  }
}

/**
 * Replace every credential in a text (a URL, a message, a whole JSON log line): the values of
 * query parameters whose name looks like a credential, and the credential after `Bearer` or
 * `Basic`.
 *
 * @param text - any text
 * @returns the text with each secret replaced by `[redacted]`
 * @example
 * ```ts
 * redactSecrets('/v1/services?token=abc&limit=5') // '/v1/services?token=[redacted]&limit=5'
 * ```
 */
export function redactSecrets(text: string): string {
  return text
    .replace(QUERY_PAIR, (pair, sep: string, name: string, value: string) =>
      value !== '' && SECRET_PARAM.test(decodeName(name)) ? `${sep}${name}=${REDACTED}` : pair,
    )
    .replace(AUTH_SCHEME, (match, scheme: string, space: string, value: string) =>
      NOT_A_CREDENTIAL.test(value.replace(/[).\]]+$/, '')) ? match : `${scheme}${space}${REDACTED}`,
    )
}

/**
 * A log destination that scrubs every line with {@link redactSecrets} before `target` gets it.
 *
 * @param target - where the lines go (pino's stdout destination by default)
 * @returns the scrubbing destination
 */
export function redactingStream(
  target: DestinationStream = pino.destination(1),
): DestinationStream {
  return { write: (line: string) => target.write(redactSecrets(line)) }
}

/**
 * pino's error serialiser without `rawPacket`: Node attaches the raw bytes of a request it
 * could not parse, headers and all, and a Buffer escapes any text scrubbing.
 */
export const errSerializer: SerializerFn = (err: unknown) => {
  if (!(err instanceof Error)) return err
  const serialized = pino.stdSerializers.err(err) as Record<string, unknown>
  delete serialized.rawPacket
  return serialized
}
