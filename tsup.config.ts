import { defineConfig } from 'tsup'

/** One bundler config for every package: dual ESM + CJS with matching type declarations. */
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  splitting: false,
  treeshake: true,
})
