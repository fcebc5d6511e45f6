import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { TokenRegistry, canRead, canWrite } from './auth.js'

const registry = new TokenRegistry([
  { name: 'ops', role: 'admin', token: 'admin-token-0123456789' },
  { name: 'team', role: 'write', services: ['checkout'], token: 'team-token-0123456789' },
  { name: 'hosts', role: 'read', token: 'read-token-0123456789' },
  { name: 'one-host', role: 'read', services: ['search'], token: 'search-read-token-0123' },
])

describe('TokenRegistry', () => {
  it('finds the token behind a bearer header, case-insensitively for the scheme', () => {
    expect(registry.authenticate('Bearer admin-token-0123456789')?.name).toBe('ops')
    expect(registry.authenticate('bearer team-token-0123456789')?.name).toBe('team')
    expect(registry.authenticate('Bearer  read-token-0123456789 ')?.name).toBe('hosts')
  })

  // Scopes are a list of service names. A string was spread into its letters (a token for
  // "checkout" covered the services c, h, e, k, o, u and t, and start created them).
  it('property: refuses services that are not a list of service names, naming the entry', () => {
    const shape = fc.oneof(
      fc.constantFrom<unknown>('checkout', 7, null, {}, { 0: 'checkout' }, true),
      fc.array(fc.constantFrom<unknown>('checkout', 'search', '', ' x', 'a/b', 3, null, ['c']), {
        minLength: 1,
        maxLength: 3,
      }),
    )
    fc.assert(
      fc.property(shape, fc.constantFrom('read' as const, 'write' as const), (services, role) => {
        const make = () =>
          new TokenRegistry([
            { name: 'ops', role: 'admin', token: 'admin-token-0123456789' },
            { name: 't', role, services: services as string[], token: 'team-token-0123456789' },
          ])
        const names = Array.isArray(services) ? (services as unknown[]) : undefined
        const bad = names?.findIndex(
          (n) => typeof n !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(n),
        )
        if (names === undefined) {
          expect(make).toThrow(/^tokens\[1\]\.services: expected a list of service names, got /)
        } else if (bad !== undefined && bad >= 0) {
          expect(make).toThrow(
            new RegExp(`^tokens\\[1\\]\\.services\\[${bad}\\]: expected a service name`),
          )
        } else {
          const principal = make().authenticate('Bearer team-token-0123456789')
          expect([...(principal?.services ?? [])]).toEqual([...new Set(names)])
        }
      }),
    )
  })

  // A token holding what `Authorization: Bearer <token>` cannot carry (the newline a secret
  // file ends with, a space, a non-ASCII letter) was accepted and then never matched: the
  // service started, and every write answered 401.
  it('refuses at start a token no Authorization header can carry, naming where', () => {
    const visible = fc.string({
      unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
      minLength: 16,
      maxLength: 40,
    })
    const unsendable = fc.constantFrom(' ', '\t', '\n', '\r\n', '\u00a0', 'é', '\u0000', '\u2028')
    fc.assert(
      fc.property(visible, fc.nat(), unsendable, (token, at, bad) => {
        const i = at % (token.length + 1)
        const secret = token.slice(0, i) + bad + token.slice(i)
        expect(() => new TokenRegistry([{ name: 'ops', role: 'admin', token: secret }])).toThrow(
          `tokens[0].token: character ${i + 1} of token "ops" is whitespace, a control character or not ASCII`,
        )
      }),
      { numRuns: 300 },
    )
    expect(
      new TokenRegistry([{ name: 'ops', role: 'admin', token: 'a-b_c.d~e+f/g=0123' }]).authenticate(
        'Bearer a-b_c.d~e+f/g=0123',
      )?.name,
    ).toBe('ops')
  })

  it.each([
    undefined,
    '',
    'Bearer',
    'Bearer ',
    'Basic YWRtaW4=',
    'Bearer admin-token-012345678',
    'Bearer admin-token-0123456789x',
    'admin-token-0123456789',
  ])('refuses %j', (header) => {
    expect(registry.authenticate(header)).toBeUndefined()
  })

  it('knows when reads need a token and which services tokens name', () => {
    expect(registry.hasReadTokens).toBe(true)
    expect(
      new TokenRegistry([{ name: 'ops', role: 'admin', token: 'admin-token-0123456789' }])
        .hasReadTokens,
    ).toBe(false)
    expect(registry.namedServices.sort()).toEqual(['checkout', 'search'])
  })

  it.each([
    [[{ name: '', role: 'admin', token: 'x'.repeat(16) }], /tokens\[0\]\.name/],
    [
      [{ name: 'a\u0000', role: 'admin', token: 'x'.repeat(16) }],
      /tokens\[0\]\.name: contains U\+0000/,
    ],
    [[{ name: 'a', role: 'admin', token: 'short' }], /tokens\[0\]\.token: expected at least 16/],
    [[{ name: 'a', role: 'root', token: 'x'.repeat(16) }], /tokens\[0\]\.role/],
    [[{ name: 'a', role: 'write', token: 'x'.repeat(16) }], /tokens\[0\]\.services/],
    [
      [
        { name: 'a', role: 'admin', token: 'x'.repeat(16) },
        { name: 'a', role: 'admin', token: 'y'.repeat(16) },
      ],
      /tokens\[1\]\.name: duplicate/,
    ],
  ])('refuses bad configuration %#', (tokens, message) => {
    expect(() => new TokenRegistry(tokens as never)).toThrow(message)
  })

  it('never puts the secret in an error message', () => {
    expect(() => new TokenRegistry([{ name: 'a', role: 'admin', token: 'secret' }])).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('secret') as unknown }),
    )
  })
})

describe('permissions', () => {
  const who = (header: string) => registry.authenticate(`Bearer ${header}`)!
  it('lets admins do everything, writers their services, readers read', () => {
    expect(canWrite(who('admin-token-0123456789'), 'anything')).toBe(true)
    expect(canWrite(who('team-token-0123456789'), 'checkout')).toBe(true)
    expect(canWrite(who('team-token-0123456789'), 'search')).toBe(false)
    expect(canWrite(who('read-token-0123456789'), 'checkout')).toBe(false)
    expect(canRead(who('read-token-0123456789'), 'checkout')).toBe(true)
    expect(canRead(who('search-read-token-0123'), 'checkout')).toBe(false)
    expect(canRead(who('search-read-token-0123'), 'search')).toBe(true)
    expect(canRead(who('team-token-0123456789'), 'search')).toBe(false)
  })
})
