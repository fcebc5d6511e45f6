import { defineProject, type UserWorkspaceConfig } from 'vitest/config'
import { fileURLToPath } from 'node:url'

const pkg = (name: string, entry = 'index.ts'): string =>
  fileURLToPath(new URL(`./packages/${name}/src/${entry}`, import.meta.url))

/** Tests run against workspace sources, never a stale dist. */
export const alias: Record<string, string> = {
  '@floodgate/core/testing': pkg('core', 'testing/index.ts'),
  '@floodgate/core/http': pkg('core', 'http/index.ts'),
  '@floodgate/core/algorithms': pkg('core', 'algorithms/index.ts'),
  '@floodgate/core/rules': pkg('core', 'rules/index.ts'),
  '@floodgate/core/options': pkg('core', 'options/index.ts'),
  '@floodgate/core/metrics': pkg('core', 'metrics/index.ts'),
  '@floodgate/core/adaptive': pkg('core', 'adaptive/index.ts'),
  '@floodgate/core': pkg('core'),
  '@floodgate/express': pkg('express'),
  '@floodgate/fastify': pkg('fastify'),
  '@floodgate/koa': pkg('koa'),
  '@floodgate/redis': pkg('redis'),
  '@floodgate/rules-service': pkg('rules-service'),
  '@floodgate/client': pkg('client'),
  '@floodgate/metrics/prometheus': pkg('metrics', 'prometheus.ts'),
  '@floodgate/metrics/opentelemetry': pkg('metrics', 'opentelemetry.ts'),
  '@floodgate/metrics': pkg('metrics'),
}

/** Options of {@link projectConfig}: what a package's tests need beyond the defaults. */
export interface ProjectConfigOptions {
  readonly hookTimeout?: number
}

/** The vitest project config every package and example uses. */
export function projectConfig(options: ProjectConfigOptions = {}): UserWorkspaceConfig {
  return defineProject({
    resolve: { alias },
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      restoreMocks: true,
      testTimeout: 20_000,
      ...(options.hookTimeout !== undefined && { hookTimeout: options.hookTimeout }),
      // Type tests (test/*.test-d.ts) are checked by `pnpm typecheck` with the rest of the
      // repository, in one program: a tsc per package here would only repeat it.
    },
  })
}
