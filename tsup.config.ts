import { readFileSync } from 'node:fs'
import { defineConfig } from 'tsup'

/** The parts of a package manifest that name its built entry points. */
interface Manifest {
  readonly exports?: Readonly<Record<string, unknown>>
  readonly bin?: string | Readonly<Record<string, string>>
}

/** Every `./dist/….js` or `./dist/….cjs` path an exports map or bin names, however nested. */
function distPaths(value: unknown): string[] {
  if (typeof value === 'string') return /^\.\/dist\/.+\.c?js$/.test(value) ? [value] : []
  if (typeof value !== 'object' || value === null) return []
  return Object.values(value).flatMap(distPaths)
}

/**
 * A bin may be a committed shim (so pnpm can link it before the first build) that imports a
 * built file: `import '../dist/cli.js'` names the bundle `cli`.
 */
function shimTargets(bin: Manifest['bin']): string[] {
  const files = typeof bin === 'string' ? [bin] : Object.values(bin ?? {})
  return files
    .filter((file) => !file.startsWith('./dist/'))
    .flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/import '\.\.\/(dist\/[^']+\.js)'/g)].map(
        (m) => `./${m[1]}`,
      ),
    )
}

/**
 * The bundles to build, read from the package's own `exports` and `bin`: `./dist/a/b.js` is
 * built from `src/a/b.ts`, so a new subpath export needs only its entry in `exports`.
 */
function entries(manifest: Manifest): Record<string, string> {
  const paths = [
    ...distPaths(manifest.exports),
    ...distPaths(manifest.bin),
    ...shimTargets(manifest.bin),
  ]
  const names = paths.map((p) => p.replace(/^\.\/dist\//, '').replace(/\.c?js$/, ''))
  return Object.fromEntries([...new Set(names)].sort().map((name) => [name, `src/${name}.ts`]))
}

const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as Manifest

/**
 * One bundler config for every package (run from the package's directory): dual ESM + CJS
 * JavaScript. The type declarations come from `scripts/build-declarations.mjs`, which may run
 * at the same time, so cleaning dist leaves them alone.
 */
export default defineConfig({
  entry: entries(manifest),
  format: ['esm', 'cjs'],
  dts: false,
  sourcemap: false,
  clean: ['!**/*.d.ts', '!**/*.d.cts'],
  target: 'node20',
  // Shared chunks keep one copy of each module across a package's entry points, so a class
  // (OptionsError) or a WeakMap is the same object whichever subpath imported it.
  splitting: true,
  treeshake: false,
  // `import.meta.url` in the CommonJS bundles (a syntax error there otherwise), `__dirname` in
  // the ES module ones: injected only into bundles that use them.
  shims: true,
  // scripts/build-js.mjs builds every package in one process, moving between their folders:
  // esbuild would otherwise resolve entries from the folder the process started in.
  esbuildOptions(options) {
    options.absWorkingDir = process.cwd()
  },
})
