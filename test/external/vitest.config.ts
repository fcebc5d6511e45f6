import { defineProject } from 'vitest/config'

/** The packed-package tests: `pnpm pack` output installed into throwaway projects. */
export default defineProject({
  test: {
    name: 'packed',
    include: ['*.test.ts'],
    globalSetup: ['./global-setup.ts'],
    // pack + install (a cold pnpm metadata cache) + tsc on a busy 2-core machine.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
})
