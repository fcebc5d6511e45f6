// What the global setup hands the packed-package tests: one `pnpm pack` of every published
// package per run, shared by every test file.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const root = fileURLToPath(new URL('../../', import.meta.url))

/** The package.json fields the tests read. */
export interface Manifest {
  readonly name: string
  readonly version?: string
  readonly private?: boolean
  readonly main?: string
  readonly bin?: Readonly<Record<string, string>>
  readonly files?: readonly string[]
  readonly packageManager?: string
  readonly exports?: Readonly<Record<string, string | Readonly<Record<string, unknown>>>>
  readonly dependencies?: Readonly<Record<string, string>>
  readonly peerDependencies?: Readonly<Record<string, string>>
  readonly devDependencies?: Readonly<Record<string, string>>
}

/** One tarball: where `pnpm pack` wrote it and the paths in it. */
export interface Pack {
  readonly filename: string
  readonly files: readonly string[]
}

/** The packs of one run, by package name, and the folder they are in. */
export interface Packs {
  readonly temp: string
  readonly byName: Readonly<Record<string, Pack>>
}

declare module 'vitest' {
  export interface ProvidedContext {
    packs: Packs
  }
}

/** The workspace's published packages (every non-private one under packages/). */
export const publishedPackages: readonly { readonly dir: string; readonly manifest: Manifest }[] =
  readdirSync(join(root, 'packages'))
    .map((d) => join(root, 'packages', d))
    .map((dir) => ({
      dir,
      manifest: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest,
    }))
    .filter(({ manifest }) => manifest.private !== true)

/** The pack of `name`, or an error naming it. */
export function packOf(packs: Packs, name: string): Pack {
  const pack = packs.byName[name]
  if (pack === undefined) throw new Error(`pnpm pack made no tarball of ${name}`)
  return pack
}
