// Benchmarks import the packages' dist: build once (`pnpm build`) when one is missing.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** Build the workspace unless every named package (`core`, `redis`, …) has its dist. */
export function ensureBuilt(packages) {
  const missing = packages.find(
    (pkg) => !existsSync(join(root, 'packages', pkg, 'dist', 'index.js')),
  )
  if (!missing) return
  console.error(`packages/${missing}/dist is missing: building (pnpm build)…`)
  // Build logs go to stderr, so stdout stays the report.
  const r = spawnSync('pnpm', ['build'], { cwd: root, stdio: ['ignore', 2, 2] })
  if (r.status !== 0) process.exit(1)
}
