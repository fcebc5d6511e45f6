import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import * as api from '@floodgate/rules-service'

describe('@floodgate/rules-service', () => {
  it('exports exactly these names', () => {
    expect(Object.keys(api).sort()).toMatchInlineSnapshot(`
      [
        "ProblemError",
        "RulesRepository",
        "TokenRegistry",
        "createRulesService",
        "mergePatch",
        "migrate",
        "migrations",
        "openApiDocument",
        "openPgDb",
        "openPgliteDb",
        "startRulesService",
        "validateWithCore",
      ]
    `)
  })

  it('ships the admin page and the CLI', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      files: string[]
      bin: Record<string, string>
    }
    expect(pkg.files).toContain('admin')
    expect(pkg.files).toContain('bin')
    // A committed shim that imports the built CLI: the link exists before the first build.
    expect(pkg.bin).toEqual({ 'floodgate-rules': './bin/floodgate-rules.js' })
    expect(readFileSync(new URL('../bin/floodgate-rules.js', import.meta.url), 'utf8')).toContain(
      "import '../dist/cli.js'",
    )
  })
})
