// The JavaScript bundles of the packages (tsup.config.ts: ESM and CommonJS), in one process.
//
//   node scripts/build-js.mjs              every package under packages/
//   node scripts/build-js.mjs <dir>...     those packages (`.` from a package's folder)
//
// One process for all packages, because starting tsup and esbuild is most of the work for
// packages this small: a `tsup` command per package costs several times the bundling itself.
// tsup reads the package from the working directory (its manifest, its externals), so each
// package is built from its own folder, one after another.
import { existsSync, readdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'tsup'

const root = fileURLToPath(new URL('../', import.meta.url))
const config = join(root, 'tsup.config.ts')

const args = process.argv.slice(2)
const dirs = (
  args.length > 0
    ? args.map((dir) => resolve(dir))
    : readdirSync(join(root, 'packages')).map((name) => join(root, 'packages', name))
).filter((dir) => existsSync(join(dir, 'package.json')))

const start = process.cwd()
try {
  for (const dir of dirs) {
    process.chdir(dir)
    await build({ config, silent: true })
  }
} finally {
  process.chdir(start)
}
