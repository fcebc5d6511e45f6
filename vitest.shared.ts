import { fileURLToPath } from 'node:url'

const pkg = (name: string, entry = 'index.ts'): string =>
  fileURLToPath(new URL(`./packages/${name}/src/${entry}`, import.meta.url))

/** Tests run against workspace sources, never a stale dist. */
export const alias: Record<string, string> = {
  '@floodgate/core/testing': pkg('core', 'testing/index.ts'),
  '@floodgate/core': pkg('core'),
  '@floodgate/express': pkg('express'),
  '@floodgate/fastify': pkg('fastify'),
  '@floodgate/koa': pkg('koa'),
  '@floodgate/redis': pkg('redis'),
  '@floodgate/rules-service': pkg('rules-service'),
  '@floodgate/client': pkg('client'),
}
