// Which database failures are an outage (the server down, unreachable, restarting, overloaded
// or too slow) rather than a fault of the service: those answer 503 with Retry-After, so that
// clients and load balancers retry, and operators look at the database, not at the service.

// Socket errors from connecting to or talking with the server.
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
])

// SQLSTATEs: 57014 statement timeout (a lock wait included), 57P01-57P03 shutting down or
// starting, 55P03 lock not available, 40001/40P01 serialization failure or deadlock (a retry
// succeeds), 25006 a write to a server taking no writes (a standby, or a primary switched to
// read-only: a failover in progress), 53xxx out of connections, memory or disk.
const SQLSTATES = new Set(['57014', '57P01', '57P02', '57P03', '55P03', '40001', '40P01', '25006'])
const SQLSTATE_CLASSES = new Set(['08', '53'])

// What node-postgres throws without a code when the connection fails or a query gets no answer.
const DRIVER_MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error and is not queryable|Client was closed and is not queryable)/

/**
 * @param err - what a database call threw
 * @returns true when it is an outage (the error's own code, or its cause's, or one of an
 * AggregateError's, says so), false for anything else (a fault to answer 500)
 */
export function isDatabaseOutage(err: unknown): boolean {
  const seen = new Set<unknown>()
  const walk = (e: unknown): boolean => {
    if (typeof e !== 'object' || e === null || seen.has(e)) return false
    seen.add(e)
    const { code, message, cause, errors } = e as {
      code?: unknown
      message?: unknown
      cause?: unknown
      errors?: unknown
    }
    if (typeof code === 'string') {
      if (NETWORK_CODES.has(code)) return true
      if (
        SQLSTATES.has(code) ||
        (/^[0-9A-Z]{5}$/.test(code) && SQLSTATE_CLASSES.has(code.slice(0, 2)))
      )
        return true
    }
    if (typeof message === 'string' && DRIVER_MESSAGES.test(message)) return true
    // Connecting to a name with several addresses fails with an AggregateError of each.
    if (Array.isArray(errors) && errors.some(walk)) return true
    return walk(cause)
  }
  return walk(err)
}

/**
 * The connection was lost at COMMIT and the server could not be asked whether the transaction
 * committed: the write may or may not be stored. An outage (503), whose answer says so.
 */
export class CommitOutcomeUnknown extends Error {
  /** An outage code, so every check that tells outages from faults takes it as one. */
  readonly code = 'ECONNRESET'

  /** @param cause - why the server could not be asked, when it could not */
  constructor(cause: unknown) {
    super('the connection was lost at COMMIT; whether the write was stored is unknown', { cause })
    this.name = 'CommitOutcomeUnknown'
  }
}
