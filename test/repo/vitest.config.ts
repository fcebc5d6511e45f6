import { defineProject } from 'vitest/config'

/** Checks of the repository as a whole: the public API report and the module graph. */
export default defineProject({
  test: {
    name: 'repo',
    include: ['*.test.ts'],
    // The API report parses every package with the TypeScript compiler.
    testTimeout: 120_000,
  },
})
