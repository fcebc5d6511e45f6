// Other Node.js majors for the packed-package tests, from the npm registry's node-<os>-<cpu>
// packages (the official binaries): fetched once into node_modules/.cache, reused after.
import { existsSync } from 'node:fs'
import { mkdir, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { root } from './packs.js'
import { runOk } from './run.js'

/**
 * The Node.js versions the packages are loaded under besides the one running the tests: the
 * newest 22 and 24 when this was written (the README promises 20, 22 and 24).
 */
export const otherNodeVersions: readonly string[] = ['22.23.3', '24.21.0']

const cacheDir = join(root, 'node_modules', '.cache', 'floodgate-node')
const fetches = new Map<string, Promise<string>>()

/** The path of a `node` binary of `version` for this machine, fetched on first use. */
export function nodeBinary(version: string): Promise<string> {
  let binary = fetches.get(version)
  if (binary === undefined) {
    binary = fetchNode(version)
    fetches.set(version, binary)
  }
  return binary
}

async function fetchNode(version: string): Promise<string> {
  const pkg = `node-${process.platform}-${process.arch}`
  const dir = join(cacheDir, `${pkg}-${version}`)
  const binary = join(dir, 'package', 'bin', 'node')
  if (existsSync(binary)) return binary
  await rm(dir, { recursive: true, force: true })
  await mkdir(dir, { recursive: true })
  // npm pack downloads the tarball without running its install script.
  await runOk('npm', ['pack', `${pkg}@${version}`, '--silent'], dir)
  const tarball = (await readdir(dir)).find((f) => f.endsWith('.tgz'))
  if (tarball === undefined) throw new Error(`npm pack ${pkg}@${version} made no tarball`)
  await runOk('tar', ['xzf', tarball, 'package/bin/node'], dir)
  await rm(join(dir, tarball))
  const reported = (await runOk(binary, ['--version'], dir)).trim()
  if (reported !== `v${version}`) throw new Error(`${binary} reports ${reported}`)
  return binary
}
