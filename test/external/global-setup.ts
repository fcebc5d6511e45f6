// Packs every published package once per run; the test files share the tarballs.
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestProject } from 'vitest/node'
import { type Pack, publishedPackages, root } from './packs.js'
import { runOk } from './run.js'

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  for (const { dir, manifest } of publishedPackages) {
    if (manifest.main === undefined || !existsSync(join(dir, manifest.main))) {
      throw new Error(`${manifest.name} has no ${manifest.main ?? 'main'}: run pnpm build first`)
    }
  }
  const temp = await mkdtemp(join(tmpdir(), 'floodgate-packed-'))
  const out = await runOk(
    'pnpm',
    [
      '--recursive',
      '--filter',
      './packages/*',
      'pack',
      '--pack-destination',
      join(temp, 'tarballs'),
      '--json',
    ],
    root,
  )
  type PackJson = { name: string; filename: string; files: { path: string }[] }[]
  const byName: Record<string, Pack> = {}
  // Lifecycle scripts (core's prepack) print their banners before the JSON.
  const json = out.slice(out.search(/^\[/m))
  for (const { name, filename, files } of JSON.parse(json) as PackJson) {
    byName[name] = { filename, files: files.map((f) => f.path) }
  }
  project.provide('packs', { temp, byName })
  return () => rm(temp, { recursive: true, force: true })
}
