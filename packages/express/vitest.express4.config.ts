import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import { defineProject } from 'vitest/config'
import { alias, projectConfig } from '../../vitest.shared.ts'

// The adapter's behaviour on Express 4 (the peer range takes ^4.21 and ^5): these tests again,
// with `express` resolved to the `express4` dev dependency, an alias of express@4. Left out:
// express.test.ts and the docs' snippets, whose apps use Express 5 only (route patterns like
// `/*splat`, and async handlers that throw, which Express 4 does not catch).
const express4 = dirname(createRequire(import.meta.url).resolve('express4/package.json'))
const base = projectConfig()

export default defineProject({
  ...base,
  resolve: {
    alias: [
      { find: /^express$/, replacement: express4 },
      ...Object.entries(alias).map(([find, replacement]) => ({ find, replacement })),
    ],
  },
  test: {
    ...base.test,
    name: 'express on express@4',
    include: [
      'test/adaptive.test.ts',
      'test/client-aborts.property.test.ts',
      'test/cors.test.ts',
      'test/express-options.test.ts',
      'test/file-server-spellings.test.ts',
      'test/headers-sent.test.ts',
      'test/keep-alive.test.ts',
      'test/key-builders.test.ts',
      'test/missing-address.test.ts',
      'test/plans-and-outcomes.test.ts',
      'test/request-info.test.ts',
      'test/request-targets.test.ts',
      'test/trust-proxy-source.test.ts',
      'test/warnings.test.ts',
    ],
  },
})
