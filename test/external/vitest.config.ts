import { defineProject } from 'vitest/config'

/** The packed-package test: `pnpm pack` output installed into a throwaway project. */
export default defineProject({
  test: {
    name: 'packed',
    include: ['*.test.ts'],
    // pack + install (a cold pnpm metadata cache) + tsc on a busy 2-core machine.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
})
