import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseCli } from './cli-options.js'

type Options = ReturnType<typeof parseCli>['options']

describe('parseCli', () => {
  it('defaults to embedded storage in ./.floodgate-data on 127.0.0.1:8080', () => {
    const { command, options } = parseCli(['serve'], {})
    expect(command).toBe('serve')
    expect(options).toMatchObject({
      dataDir: '.floodgate-data',
      port: 8080,
      host: '127.0.0.1',
      tokens: [],
    })
    expect(options.databaseUrl).toBeUndefined()
  })

  it('uses PostgreSQL when DATABASE_URL is set, and tokens from the environment', () => {
    const { options } = parseCli(['serve', '--port', '0', '--service', 'a', '--service', 'b'], {
      DATABASE_URL: 'postgres://db/rules',
      FLOODGATE_ADMIN_TOKEN: 'admin-token-0123456789',
      FLOODGATE_READ_TOKEN: 'read-token-0123456789',
    })
    expect(options).toMatchObject({
      databaseUrl: 'postgres://db/rules',
      port: 0,
      services: ['a', 'b'],
    })
    expect(options.dataDir).toBeUndefined()
    expect(options.tokens).toEqual([
      { name: 'admin', role: 'admin', token: 'admin-token-0123456789' },
      { name: 'reader', role: 'read', token: 'read-token-0123456789' },
    ])
  })

  it('takes the database timeout from --database-timeout or FLOODGATE_DATABASE_TIMEOUT_MS', () => {
    const env = { DATABASE_URL: 'postgres://db/rules', FLOODGATE_DATABASE_TIMEOUT_MS: '2500' }
    expect(parseCli(['serve'], env).options.databaseTimeoutMs).toBe(2500)
    expect(parseCli(['serve', '--database-timeout', '700'], env).options.databaseTimeoutMs).toBe(
      700,
    )
    expect(
      parseCli(['serve'], { DATABASE_URL: 'postgres://db/rules' }).options.databaseTimeoutMs,
    ).toBeUndefined()
    expect(() => parseCli(['serve', '--database-timeout', '1.5'], env)).toThrow(
      /--database-timeout: expected a whole number/,
    )
  })

  it('reads a tokens file, taking secrets from the environment when asked', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fg-cli-'))
    const file = join(dir, 'tokens.json')
    writeFileSync(
      file,
      JSON.stringify([
        {
          name: 'checkout-team',
          role: 'write',
          services: ['checkout'],
          tokenEnv: 'CHECKOUT_TOKEN',
        },
        { name: 'hosts', role: 'read', token: 'read-token-0123456789' },
      ]),
    )
    const { options } = parseCli(['serve', '--tokens-file', file], {
      CHECKOUT_TOKEN: 'checkout-token-0123456789',
    })
    expect(options.tokens).toEqual([
      {
        name: 'checkout-team',
        role: 'write',
        services: ['checkout'],
        token: 'checkout-token-0123456789',
      },
      { name: 'hosts', role: 'read', services: undefined, token: 'read-token-0123456789' },
    ])
    expect(() => parseCli(['serve', '--tokens-file', file], {})).toThrow(
      /CHECKOUT_TOKEN is not set/,
    )
  })

  // A tokens file is access control: a field read otherwise than it was meant must stop the
  // start. `"service": [...]` (a typo) left a read token covering every service, and
  // `"services": "checkout"` (a string) scoped a token to the services c, h, e, k, o, u and t,
  // each created at start.
  it('refuses a tokens file whose entries have unknown fields, wrong shapes or a key twice', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fg-cli-'))
    const cases: [string, RegExp][] = [
      [
        '[{"name":"hosts","role":"read","service":["checkout"],"token":"read-token-0123456789"}]',
        /tokens\[0\]: unknown field "service" \(expected name, role, services, token, tokenEnv\)/,
      ],
      ['["read-token-0123456789"]', /tokens\[0\]: expected an object/],
      [
        '[{"name":"hosts","role":"read","role":"admin","token":"read-token-0123456789"}]',
        /gives a key twice in one object, at \[0\]\.role/,
      ],
    ]
    for (const [i, [text, error]] of cases.entries()) {
      const file = join(dir, `tokens-${i}.json`)
      writeFileSync(file, text)
      expect(() => parseCli(['serve', '--tokens-file', file], {}), text).toThrow(error)
    }
    // What Windows editors write: a byte order mark before the JSON.
    const bom = join(dir, 'bom.json')
    writeFileSync(bom, `\uFEFF[{"name":"hosts","role":"read","token":"read-token-0123456789"}]`)
    expect(parseCli(['serve', '--tokens-file', bom], {}).options.tokens).toHaveLength(1)
  })

  it('shows help, and refuses unknown commands and bad numbers', () => {
    expect(parseCli([], {}).command).toBe('help')
    expect(parseCli(['serve', '--help'], {}).command).toBe('help')
    expect(() => parseCli(['start'], {})).toThrow(/unknown command "start"/)
    expect(() => parseCli(['serve', '--port', 'x'], {})).toThrow(
      /--port: expected a whole number from 0 to 65535, got "x"/,
    )
    expect(() => parseCli(['serve', '--nope'], {})).toThrow()
  })

  // Number() reads '' as 0 (an empty PORT= listened on a random port), and ' 80', '0x1F90',
  // '1e3' or '8080.0' as numbers nobody wrote. Numbers from the command line or the environment
  // are decimal digits, within the option's range, or refused naming the option.
  it('property: a number option is taken exactly when it is decimal digits within its range', () => {
    const options = [
      { flag: '--port', env: 'PORT', min: 0, max: 65_535, read: (o: Options) => o.port },
      {
        flag: '--body-limit',
        env: undefined,
        min: 1,
        max: 2 ** 31 - 1,
        read: (o: Options) => o.bodyLimit,
      },
      {
        flag: '--database-timeout',
        env: 'FLOODGATE_DATABASE_TIMEOUT_MS',
        min: 1,
        max: 2 ** 31 - 1001,
        read: (o: Options) => o.databaseTimeoutMs,
      },
    ]
    const spelling = fc.oneof(
      fc.nat({ max: 2 ** 32 }).map(String),
      fc.constantFrom(
        '',
        ' ',
        ' 80',
        '80 ',
        '+80',
        '-1',
        '0x1F90',
        '1e3',
        '8080.0',
        '08080',
        '٨٠',
        'Infinity',
        'NaN',
        '99999999999999999999',
      ),
      fc.string({ unit: fc.constantFrom('0', '1', '9', ' ', '.', 'e', 'x', '-', '+') }),
    )
    fc.assert(
      fc.property(fc.constantFrom(...options), spelling, fc.boolean(), (option, value, viaEnv) => {
        const env: Record<string, string> = { DATABASE_URL: 'postgres://db/x' }
        const argv = ['serve']
        if (viaEnv && option.env !== undefined) env[option.env] = value
        else argv.push(`${option.flag}=${value}`)
        const n = Number(value)
        const ok = /^\d+$/.test(value) && n >= option.min && n <= option.max
        if (ok) expect(option.read(parseCli(argv, env).options)).toBe(n)
        else
          expect(() => parseCli(argv, env), `${option.flag} ${JSON.stringify(value)}`).toThrow(
            new RegExp(
              `^${option.flag}: expected a whole number from ${option.min} to ${option.max}, got `,
            ),
          )
      }),
      { numRuns: 1000 },
    )
  })
})
