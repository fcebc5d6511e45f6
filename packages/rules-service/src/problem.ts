/**
 * Errors the API answers with, as RFC 9457 problem details (`application/problem+json`).
 * The `type` URIs are stable identifiers; the `title` is the same for every instance of a type
 * and the `detail` says what was wrong with this request.
 */
export type ProblemType =
  | 'bad-request'
  | 'invalid-json'
  | 'invalid-rules'
  | 'unauthorized'
  | 'forbidden'
  | 'not-found'
  | 'method-not-allowed'
  | 'conflict'
  | 'precondition-failed'
  | 'payload-too-large'
  | 'unsupported-media-type'
  | 'request-timeout'
  | 'uri-too-long'
  | 'headers-too-large'
  | 'internal'
  | 'unavailable'

const TITLES: Record<ProblemType, [number, string]> = {
  'bad-request': [400, 'Bad request'],
  'invalid-json': [400, 'Malformed JSON'],
  'invalid-rules': [400, 'Invalid rules'],
  unauthorized: [401, 'Missing or unknown token'],
  forbidden: [403, 'Token not allowed here'],
  'not-found': [404, 'Not found'],
  'method-not-allowed': [405, 'Method not allowed'],
  conflict: [409, 'Conflict'],
  'precondition-failed': [412, 'The rule set changed'],
  'payload-too-large': [413, 'Body too large'],
  'unsupported-media-type': [415, 'Unsupported media type'],
  'request-timeout': [408, 'Request timeout'],
  'uri-too-long': [414, 'URI too long'],
  'headers-too-large': [431, 'Request headers too large'],
  internal: [500, 'Internal error'],
  unavailable: [503, 'Service unavailable'],
}

/** The media type of every error response. */
export const PROBLEM_MEDIA_TYPE = 'application/problem+json'

/**
 * The problem type for an HTTP status: its own type where there is one, `bad-request` for
 * another 4xx (the body keeps the real status), `internal` for the rest.
 *
 * @param status - an error status (400-599)
 * @param detail - what was wrong
 * @returns the status to answer and the body
 */
export function problemForStatus(status: number, detail: string): ProblemBody {
  const own = (Object.keys(TITLES) as ProblemType[]).find(
    (type) => TITLES[type][0] === status && type !== 'invalid-json' && type !== 'invalid-rules',
  )
  if (own !== undefined) return problemBody(own, detail)
  if (status >= 400 && status < 500) return { ...problemBody('bad-request', detail), status }
  return problemBody('internal', 'the service failed; see its logs')
}

/** The JSON body of a problem response. */
export interface ProblemBody {
  type: string
  title: string
  status: number
  detail: string
  /** Every validation issue as `path: message` (present for `invalid-rules`). */
  errors?: string[]
  /** The set's revision, when the problem is about it (412). */
  revision?: number
  /** The set's current version (its ETag without quotes), when the problem is about it (412). */
  version?: string
}

/** Base URI of problem types; each type has a section in docs/rules-service.md. */
export const PROBLEM_BASE =
  'https://github.com/floodgate/floodgate/blob/main/docs/rules-service.md#problem-'

/** An error the API turns into a problem+json response with its status. */
export class ProblemError extends Error {
  readonly status: number
  readonly problem: ProblemType
  readonly errors: readonly string[] | undefined
  readonly revision: number | undefined
  readonly version: string | undefined

  /**
   * @param problem - the problem type (picks the status and title)
   * @param detail - what was wrong with this request
   * @param extra - validation issues or the current revision and version
   */
  constructor(
    problem: ProblemType,
    detail: string,
    extra: { errors?: readonly string[]; revision?: number; version?: string } = {},
  ) {
    super(detail)
    this.name = 'ProblemError'
    this.problem = problem
    this.status = TITLES[problem][0]
    this.errors = extra.errors
    this.revision = extra.revision
    this.version = extra.version
  }

  /** @returns the response body */
  toBody(): ProblemBody {
    return problemBody(this.problem, this.message, {
      ...(this.errors ? { errors: [...this.errors] } : {}),
      ...(this.revision !== undefined ? { revision: this.revision } : {}),
      ...(this.version !== undefined ? { version: this.version } : {}),
    })
  }
}

/**
 * Build a problem body.
 *
 * @param problem - the type
 * @param detail - what was wrong
 * @param extra - extension members
 * @returns the body to send with status `body.status`
 */
export function problemBody(
  problem: ProblemType,
  detail: string,
  extra: Partial<Pick<ProblemBody, 'errors' | 'revision' | 'version'>> = {},
): ProblemBody {
  const [status, title] = TITLES[problem]
  return { type: PROBLEM_BASE + problem, title, status, detail, ...extra }
}
