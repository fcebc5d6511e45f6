/**
 * What a service may be called: it appears in URLs and in hosts' configuration, so letters,
 * digits, '.', '_' and '-', starting with a letter or a digit, at most 100 characters.
 */
export const SERVICE_NAME: RegExp = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/

/**
 * Throw when a configured service name (option or token scope) could never be addressed.
 *
 * @param name - the name
 * @param where - the option it came from, for the message
 * @returns the name
 */
export function checkServiceName(name: string, where: string): string {
  if (typeof name !== 'string' || !SERVICE_NAME.test(name)) {
    throw new TypeError(
      `${where}: expected a service name of 1-100 letters, digits, '.', '_' or '-' starting with a letter or digit, got ${JSON.stringify(name)}`,
    )
  }
  return name
}
