import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { redactSecrets } from './log-redaction.js'

// A log line is JSON: the URL sits in a string, escaped. Whatever surrounds a credential, the
// scrubbed line must not hold it, and must still be the same JSON with everything else intact.
describe('redactSecrets', () => {
  const secret = fc.stringMatching(/^[A-Za-z0-9._~+/=-]{12,40}$/)
  const secretName = fc.constantFrom(
    'token',
    'access_token',
    'api_key',
    'apiKey',
    'X-Api-Key',
    'client_secret',
    'password',
    'sig',
    'jwt',
    '%74oken',
  )
  const plain = fc.constantFrom('limit', 'before', 'rule', 'page', 'q')
  const plainValue = fc.stringMatching(/^[a-z0-9]{0,8}$/)

  it('removes every credential from a JSON log line and keeps the rest', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(plain, plainValue), { maxLength: 3 }),
        secretName,
        secret,
        secret,
        fc.constantFrom('', '"', '\\'),
        (before, name, querySecret, bearerSecret, odd) => {
          const query = [...before.map(([k, v]) => `${k}=${v}`), `${name}=${odd}${querySecret}`]
          const line = JSON.stringify({
            url: `/v1/services/x/audit?${query.join('&')}`,
            msg: `refused Bearer ${bearerSecret} for '/v1?${name}=${querySecret}'`,
          })
          const scrubbed = redactSecrets(line)
          expect(scrubbed).not.toContain(querySecret)
          expect(scrubbed).not.toContain(bearerSecret)
          const parsed = JSON.parse(scrubbed) as { url: string }
          for (const [k, v] of before) expect(parsed.url).toContain(`${k}=${v}`)
        },
      ),
    )
  })

  it('leaves prose about bearer tokens alone', () => {
    const text = 'reading rules needs a bearer token (Authorization: Bearer …)'
    expect(redactSecrets(text)).toBe(text)
  })
})
