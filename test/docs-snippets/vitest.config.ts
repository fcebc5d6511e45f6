import { defineProject } from 'vitest/config'

/**
 * The type-check of every docs snippet the run's docs tests ran, in one program. It runs after
 * every other project (a higher `groupOrder`), when all the snippets are written.
 */
export default defineProject({
  test: {
    name: 'docs-snippets',
    include: ['*.test.ts'],
    sequence: { groupOrder: 1 },
    testTimeout: 120_000,
  },
})
