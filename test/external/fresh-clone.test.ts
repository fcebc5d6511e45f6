// A newcomer's first command: `pnpm install` in a fresh clone, before anything is built.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, inject, it } from 'vitest'
import { root } from './packs.js'
import { run, runOk } from './run.js'

const packs = inject('packs')

/** Every workspace manifest (root, packages, examples, bench) that git tracks. */
async function trackedManifests(): Promise<string[]> {
  const out = await runOk('git', ['ls-files', 'package.json', '**/package.json'], root)
  return out.split('\n').filter((p) => p !== '')
}

describe('a fresh clone', () => {
  it('every bin of every workspace package is a file git tracks (not a build output)', async () => {
    const tracked = new Set(
      (await runOk('git', ['ls-files'], root)).split('\n').filter((p) => p !== ''),
    )
    const bins: string[] = []
    for (const manifest of await trackedManifests()) {
      const { bin } = JSON.parse(readFileSync(join(root, manifest), 'utf8')) as {
        bin?: string | Record<string, string>
      }
      const dir = manifest.slice(0, -'package.json'.length)
      for (const target of typeof bin === 'string' ? [bin] : Object.values(bin ?? {})) {
        const path = join(dir, target)
        bins.push(path)
        expect(tracked.has(path), `${manifest}: bin ${target} is not in git`).toBe(true)
      }
    }
    expect(bins.length).toBeGreaterThan(0)
  })

  it('pnpm install --frozen-lockfile prints no warning', async () => {
    // A clone of the committed HEAD, installed offline from the store this run filled.
    const clone = join(packs.temp, 'clone')
    await runOk('git', ['clone', '--quiet', '--no-hardlinks', root, clone], root)
    const install = await run('pnpm', ['install', '--frozen-lockfile', '--offline'], clone)
    expect(install.code, install.output).toBe(0)
    expect(install.output).not.toMatch(/WARN/)
  })
})
