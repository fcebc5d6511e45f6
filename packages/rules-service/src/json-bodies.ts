// How request bodies become JSON. JSON is UTF-8 (RFC 8259): bytes that are not UTF-8, or a body
// declared in another charset, are refused rather than decoded with U+FFFD in place of what
// could not be read, which stored a header value or a description other than the one sent.
import { decodeText, duplicateJsonKey } from '@floodgate/core/rules'
import type { FastifyInstance } from 'fastify'
import { ProblemError } from './problem.js'

/** The media types the API reads as JSON: JSON itself, and merge patches (RFC 7396). */
const JSON_TYPES = ['application/json', 'application/merge-patch+json'] as const

/**
 * @param contentType - the request's Content-Type header
 * @returns its charset parameter, lower-cased and unquoted, when it has one
 */
function charsetOf(contentType: string | undefined): string | undefined {
  for (const param of (contentType ?? '').split(';').slice(1)) {
    const [name = '', ...value] = param.split('=')
    if (name.trim().toLowerCase() === 'charset') {
      return value
        .join('=')
        .trim()
        .replace(/^"(.*)"$/, '$1')
        .toLowerCase()
    }
  }
  return undefined
}

/**
 * Parse `application/json` and `application/merge-patch+json` bodies as UTF-8 JSON, refusing
 * `__proto__` and `constructor.prototype` keys and a key given twice in one object (JSON.parse
 * would keep the last and drop the first without a word); every other media type gets 415.
 *
 * @param app - the service's Fastify app, before its routes are registered
 */
export function installJsonBodies(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeAllContentTypeParsers()
  app.addContentTypeParser([...JSON_TYPES], { parseAs: 'buffer' }, (request, body, done) => {
    const charset = charsetOf(request.headers['content-type'])
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      done(
        new ProblemError(
          'unsupported-media-type',
          `charset=${charset}: the API reads JSON in UTF-8 only; send the body as UTF-8, with charset=utf-8 or no charset`,
        ),
        undefined,
      )
      return
    }
    let text: string
    try {
      text = decodeText(body as Buffer)
    } catch (err) {
      done(new ProblemError('invalid-json', `the body ${(err as Error).message}`), undefined)
      return
    }
    // The default parser calls done itself; its typed result is not a promise to wait for.
    void parseJson(request, text, (err, value) => {
      const duplicate = err ? undefined : duplicateJsonKey(text, 'body')
      if (duplicate === undefined) return done(err, value)
      done(
        new ProblemError(
          'invalid-json',
          `${duplicate}: given twice in one object (which value counts would depend on the parser); give each key once`,
        ),
        undefined,
      )
    })
  })
}
