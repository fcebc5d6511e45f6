import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { parseRulesDocument } from '../src/rules/schema.js'

// Runs every ```ts block of the docs pages below as a module: a snippet that no longer
// compiles or whose assertions fail breaks the build, so the docs cannot drift from the code.
// Rule sets shown as ```yaml or ```json on the data pages must pass the rule schema.
const pages = ['limiter.md']
const dataPages = ['rules.md']
const docs = new URL('../../../docs/', import.meta.url)
const out = new URL('./.docs-snippets/', import.meta.url)

function snippets(page: string, lang = 'ts'): string[] {
  const text = readFileSync(new URL(page, docs), 'utf8')
  return [...text.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!)
}

describe('docs snippets', () => {
  mkdirSync(out, { recursive: true })
  afterAll(() => rmSync(out, { recursive: true, force: true }))

  for (const page of dataPages) {
    const blocks = [...snippets(page, 'yaml'), ...snippets(page, 'json')]
    it(`docs/${page}: every rule set shown passes the schema`, () => {
      expect(blocks.length).toBeGreaterThan(0)
      for (const block of blocks)
        expect(parseRulesDocument(parseYaml(block)).rules.length).toBeGreaterThan(0)
    })
  }

  for (const page of pages) {
    snippets(page).forEach((code, i) => {
      it(`docs/${page} snippet ${i + 1} runs`, async () => {
        const file = new URL(`${page.replace('.md', '')}-${i + 1}.ts`, out)
        writeFileSync(file, code)
        await import(fileURLToPath(file))
      })
    })
  }
})
