import { createHash, timingSafeEqual } from 'node:crypto'
import { checkServiceName } from './service-name.js'
import { unstorableReason } from './storable-json.js'

/** What a token may do. */
export type TokenRole =
  /** Read and write every service, and create services. */
  | 'admin'
  /** Read and write the rules of its `services`. */
  | 'write'
  /** Read the rules of its `services` (the hosts' retrievers). */
  | 'read'

/** A bearer token the service accepts, configured at start. */
export interface TokenOptions {
  /** Who holds it: recorded as the actor in the audit trail, never the secret itself. */
  name: string
  /** The secret; at least 16 characters. */
  token: string
  role: TokenRole
  /**
   * Services it covers; required for `write`, ignored for `admin`.
   * @default every service (read tokens)
   */
  services?: readonly string[] | undefined
}

/** The caller behind a request, once its token matched. */
export interface Principal {
  name: string
  role: TokenRole
  services: ReadonlySet<string> | undefined
}

interface StoredToken extends Principal {
  digest: Buffer
}

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest()

/**
 * Checks bearer tokens in constant time: every configured token is compared (on SHA-256
 * digests, so lengths never differ) without stopping at the first match.
 */
export class TokenRegistry {
  readonly #tokens: StoredToken[]

  /**
   * @param tokens - the accepted tokens; names must be unique
   */
  constructor(tokens: readonly TokenOptions[]) {
    const names = new Set<string>()
    this.#tokens = tokens.map((t, i) => {
      if (typeof t.name !== 'string' || t.name.length === 0) {
        throw new TypeError(`tokens[${i}].name: expected a non-empty string`)
      }
      // The name is the audit trail's actor: one PostgreSQL cannot store would fail every write.
      const unstorable = unstorableReason(t.name)
      if (unstorable !== undefined) throw new TypeError(`tokens[${i}].name: ${unstorable}`)
      if (names.has(t.name))
        throw new TypeError(`tokens[${i}].name: duplicate name ${JSON.stringify(t.name)}`)
      names.add(t.name)
      if (typeof t.token !== 'string' || t.token.length < 16) {
        throw new TypeError(
          `tokens[${i}].token: expected at least 16 characters (token ${JSON.stringify(t.name)})`,
        )
      }
      // `Bearer <token>` carries visible ASCII only: a token with a space, a line break (a
      // secret file's last newline) or a non-ASCII letter could never be presented, so every
      // request with it would be refused as unknown. Said at start, never the secret itself.
      const unsendable = t.token.search(/[^\x21-\x7E]/)
      if (unsendable >= 0) {
        throw new TypeError(
          `tokens[${i}].token: character ${unsendable + 1} of token ${JSON.stringify(t.name)} is whitespace, a control character or not ASCII, which an Authorization header cannot carry; the token could never match`,
        )
      }
      if (t.role !== 'admin' && t.role !== 'write' && t.role !== 'read') {
        throw new TypeError(
          `tokens[${i}].role: expected admin, write or read, got ${JSON.stringify(t.role)}`,
        )
      }
      // A list of service names: a string would be spread into its letters, each a service.
      const services: unknown = t.services
      if (services !== undefined) {
        if (!Array.isArray(services)) {
          throw new TypeError(
            `tokens[${i}].services: expected a list of service names, got ${JSON.stringify(services) ?? typeof services}`,
          )
        }
        services.forEach((name: unknown, j) => {
          checkServiceName(name as string, `tokens[${i}].services[${j}]`)
        })
      }
      if (t.role === 'write' && (t.services === undefined || t.services.length === 0)) {
        throw new TypeError(`tokens[${i}].services: a write token needs the services it may change`)
      }
      return {
        name: t.name,
        role: t.role,
        services: t.role === 'admin' || t.services === undefined ? undefined : new Set(t.services),
        digest: digest(t.token),
      }
    })
  }

  /** True when some token has the read role (then reads need a token). */
  get hasReadTokens(): boolean {
    return this.#tokens.some((t) => t.role === 'read')
  }

  /** Services named by write or read tokens (created at start so they exist). */
  get namedServices(): string[] {
    return [...new Set(this.#tokens.flatMap((t) => [...(t.services ?? [])]))]
  }

  /**
   * Find the token in an `Authorization` header.
   *
   * @param header - the header value
   * @returns the principal, or undefined when absent or unknown
   */
  authenticate(header: string | undefined): Principal | undefined {
    if (header === undefined) return undefined
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header)
    if (!match?.[1]) return undefined
    const presented = digest(match[1])
    let found: StoredToken | undefined
    for (const token of this.#tokens) {
      // No early exit: the time taken does not depend on which token matched.
      if (timingSafeEqual(presented, token.digest) && found === undefined) found = token
    }
    return found && { name: found.name, role: found.role, services: found.services }
  }
}

/**
 * @param principal - the caller
 * @param service - the service it wants to change
 * @returns whether it may write that service's rules
 */
export function canWrite(principal: Principal, service: string): boolean {
  if (principal.role === 'admin') return true
  return principal.role === 'write' && principal.services?.has(service) === true
}

/**
 * @param principal - the caller
 * @param service - the service it wants to read
 * @returns whether it may read that service's rules
 */
export function canRead(principal: Principal, service: string): boolean {
  return (
    principal.role === 'admin' ||
    principal.services === undefined ||
    principal.services.has(service)
  )
}
