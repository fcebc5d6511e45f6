import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRulesService, type RulesServiceApp } from '@floodgate/rules-service'
import { TOKENS } from './helpers.js'

// GET /v1/me: what the admin page asks to show only the actions a token may take.
describe('GET /v1/me', () => {
  let app: RulesServiceApp
  beforeAll(async () => {
    app = await createRulesService({
      tokens: [
        { name: 'ops', role: 'admin', token: TOKENS.admin },
        { name: 'checkout-team', role: 'write', token: TOKENS.checkout, services: ['checkout'] },
        { name: 'hosts', role: 'read', token: TOKENS.reader },
      ],
    })
  })
  afterAll(() => app?.close())

  const me = (token?: string) =>
    app.inject({
      url: '/v1/me',
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    })

  it('names the token, its role and its services', async () => {
    expect((await me(TOKENS.admin)).json()).toEqual({ name: 'ops', role: 'admin', services: null })
    expect((await me(TOKENS.checkout)).json()).toEqual({
      name: 'checkout-team',
      role: 'write',
      services: ['checkout'],
    })
    expect((await me(TOKENS.reader)).json()).toEqual({
      name: 'hosts',
      role: 'read',
      services: null,
    })
  })

  it('is read-only without a token, and a 401 problem for an unknown one', async () => {
    expect((await me()).json()).toEqual({ name: null, role: null, services: null })
    const unknown = await me('not-a-token-0123456789abcdef')
    expect(unknown.statusCode).toBe(401)
    expect(unknown.headers['content-type']).toMatch(/^application\/problem\+json/)
    expect(unknown.headers['www-authenticate']).toMatch(/^Bearer/)
  })
})
