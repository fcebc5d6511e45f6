import { ProblemError } from './problem.js'
import { SERVICE_NAME } from './service-name.js'

/**
 * The 404 for a service that does not exist, saying how to create it: a caller who got the
 * name right but forgot to create the service learns the one call that fixes it.
 *
 * @param service - the name in the request
 * @returns the problem to throw
 */
export function unknownService(service: string): ProblemError {
  const name = JSON.stringify(service)
  if (!SERVICE_NAME.test(service)) {
    return new ProblemError(
      'not-found',
      `no service named ${name}, and there cannot be one: service names are 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    )
  }
  const path = `/v1/services/${encodeURIComponent(service)}`
  return new ProblemError(
    'not-found',
    `no service named ${name}; an admin token creates it with PUT ${path} (or start the service with --service ${service})`,
  )
}
