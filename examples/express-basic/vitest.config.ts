import { defineProject } from 'vitest/config'
import { alias } from '../../vitest.shared.ts'

export default defineProject({
  resolve: { alias },
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    restoreMocks: true,
    testTimeout: 20_000,
  },
})
