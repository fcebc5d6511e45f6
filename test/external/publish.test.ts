// What `pnpm publish` would upload, per package (a dry run: nothing leaves the machine), and
// what someone who installed a package from the registry can follow from its README.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, inject, it } from 'vitest'
import { packOf, publishedPackages, root } from './packs.js'
import { run, runOk } from './run.js'

const packs = inject('packs')

/** The paths `npm notice` lists under "Tarball Contents" in a publish dry run. */
function publishedFiles(output: string): string[] {
  const lines = output.split('\n')
  const start = lines.findIndex((l) => l.includes('Tarball Contents'))
  const end = lines.findIndex((l) => l.includes('Tarball Details'))
  return lines
    .slice(start + 1, end)
    .map((l) => /^npm notice\s+[\d.]+\s*k?B\s+(\S.*)$/i.exec(l.trim())?.[1])
    .filter((p): p is string => p !== undefined)
}

/** Targets of the Markdown links in `markdown`. */
function linkTargets(markdown: string): string[] {
  return [...markdown.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!)
}

describe.concurrent.each(publishedPackages)('$manifest.name', ({ dir, manifest }) => {
  it('pnpm publish --dry-run succeeds and uploads README.md, LICENSE and dist, no maps or src', async () => {
    const result = await run('pnpm', ['publish', '--dry-run', '--no-git-checks'], dir)
    expect(result.code, result.output).toBe(0)
    expect(result.output).toContain(`${manifest.name}@${manifest.version ?? ''}`)
    expect(result.output).toMatch(/public access/)
    const files = publishedFiles(result.output)
    expect(files).toContain('README.md')
    expect(files).toContain('LICENSE')
    expect(files.some((f) => f.startsWith('dist/'))).toBe(true)
    expect(files.filter((f) => f.endsWith('.map') || f.startsWith('src/'))).toEqual([])
  })

  it('its README links only to web pages and to files the tarball ships', () => {
    const readme = readFileSync(join(dir, 'README.md'), 'utf8')
    const { files } = packOf(packs, manifest.name)
    for (const target of linkTargets(readme)) {
      if (/^https:\/\//.test(target)) continue
      const path = target.replace(/^\.\//, '').replace(/#.*$/, '')
      expect(files, `README link ${target}`).toContain(path)
    }
  })

  it('ships an MIT LICENSE naming the Floodgate authors', async () => {
    const license = await runOk(
      'tar',
      ['xzOf', packOf(packs, manifest.name).filename, 'package/LICENSE'],
      root,
    )
    expect(license).toMatch(/^MIT License/)
    expect(license).toContain('The Floodgate authors')
  })
})

describe('@floodgate/core docs/error-codes.md', () => {
  it('is in the tarball, with a section for every code the messages link to', async () => {
    const doc = await runOk(
      'tar',
      ['xzOf', packOf(packs, '@floodgate/core').filename, 'package/docs/error-codes.md'],
      root,
    )
    const { errorCodes } = (await import(join(root, 'packages/core/dist/options/index.js'))) as {
      errorCodes: Record<string, string>
    }
    const headings = [...doc.matchAll(/^## (\w+)$/gm)].map((m) => m[1])
    expect(Object.keys(errorCodes).length).toBeGreaterThan(0)
    for (const code of Object.keys(errorCodes)) expect(headings, code).toContain(code)
    // A link to a page the package does not ship would not resolve where it is installed.
    expect([...doc.matchAll(/\]\((\.\/)?[\w-]+\.md/g)]).toEqual([])
  })
})
