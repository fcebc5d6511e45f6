import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    // Collects the docs snippets the docs tests run, for test/docs-snippets/types.test.ts.
    globalSetup: ['test/docs-snippets/global-setup.ts'],
    projects: [
      'packages/*/vitest.config.ts',
      // The Express adapter's tests again on Express 4 (see the file).
      'packages/express/vitest.express4.config.ts',
      'examples/*/vitest.config.ts',
      'test/external/vitest.config.ts',
      'test/repo/vitest.config.ts',
      'test/docs-snippets/vitest.config.ts',
    ],
  },
})
