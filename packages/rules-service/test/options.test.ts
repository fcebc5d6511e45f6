import { describe, expect, it } from 'vitest'
import { createRulesService } from '@floodgate/rules-service'

// Bad configuration fails at start, with a message naming the option, before any database
// is opened (no PGlite instance is created by these tests).
describe('createRulesService options', () => {
  it.each([
    [{ services: ['checkout', 'bad name'] }, /services\[1\]: expected a service name/],
    [
      { tokens: [{ name: 't', role: 'write' as const, services: ['a/b'], token: 'x'.repeat(16) }] },
      /tokens\[0\]\.services\[0\]: expected a service name/,
    ],
    [{ tokens: [{ name: 't', role: 'admin' as const, token: 'short' }] }, /tokens\[0\]\.token/],
  ])('refuses %j', async (options, message) => {
    await expect(createRulesService(options)).rejects.toThrow(message)
  })
})
