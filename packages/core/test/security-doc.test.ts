import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// docs/security.md is the project's threat model: code, tests and docs point at its sections,
// and it points at the tests that show each case. Both directions must stay true.

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')
const page = readFileSync(resolve(root, 'docs/security.md'), 'utf8')

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
const anchors = new Set(
  [...page.matchAll(/^#{2,3} (.+)$/gm)].map((m) =>
    m[1]!
      .toLowerCase()
      .replace(/[^a-z0-9 -]/g, '')
      .replace(/ /g, '-'),
  ),
)

const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((f) => /\.(ts|mjs|md|lua|json|yaml)$/.test(f) && existsSync(resolve(root, f)))

describe('docs/security.md', () => {
  it('every section a file points at exists', () => {
    const missing: string[] = []
    for (const file of tracked) {
      const text = readFileSync(resolve(root, file), 'utf8')
      for (const m of text.matchAll(/security\.md#([a-z0-9-]+)/g)) {
        if (!anchors.has(m[1]!)) missing.push(`${file}: #${m[1]}`)
      }
    }
    expect(missing).toEqual([])
  })

  it('every test file it names exists', () => {
    const named = [...page.matchAll(/`([a-z{},-]+\/(?:src|test)\/[\w./-]*\.ts)`/g)].map(
      (m) => m[1]!,
    )
    expect(named.length).toBeGreaterThan(20)
    const expand = (p: string): string[] => {
      const m = /\{([^}]+)\}/.exec(p)
      return m ? m[1]!.split(',').flatMap((alt) => expand(p.replace(m[0], alt))) : [p]
    }
    const missing = named
      .flatMap(expand)
      .filter((p) => !p.includes('*') && !existsSync(resolve(root, 'packages', p)))
    expect(missing).toEqual([])
  })

  it('the project cites no numbered list it does not contain', () => {
    const citations: string[] = []
    for (const file of tracked) {
      if (file.startsWith('pnpm-lock')) continue
      const text = readFileSync(resolve(root, file), 'utf8')
      for (const m of text.matchAll(/\(P\d{1,2}\b[^)]*\)|\b[Pp]itfalls? P\d{1,2}\b/g)) {
        citations.push(`${file}: ${m[0]}`)
      }
    }
    expect(citations).toEqual([])
  })
})
