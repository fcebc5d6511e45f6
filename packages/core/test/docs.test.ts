import { afterAll, describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { parseRulesDocument } from '../src/rules/schema.js'
import { SnippetRunner, docSnippets, where } from './docs-snippets.js'

// Runs every ```ts block of the docs pages below as a module: a snippet that no longer
// compiles or whose assertions fail breaks the build, so the docs cannot drift from the code.
// Rule sets shown as ```yaml or ```json on the data pages must pass the rule schema.
const pages = ['limiter.md']
const dataPages = ['rules.md']

describe('docs snippets', () => {
  const runner = new SnippetRunner(new URL('..', import.meta.url))
  afterAll(() => runner.close())

  for (const page of dataPages) {
    const blocks = docSnippets(page, ['yaml', 'json'])
    it(`docs/${page}: every rule set shown passes the schema`, () => {
      expect(blocks.length).toBeGreaterThan(0)
      for (const block of blocks)
        expect(
          parseRulesDocument(parseYaml(block.code)).rules.length,
          where(block),
        ).toBeGreaterThan(0)
    })
  }

  for (const page of pages) {
    for (const snippet of docSnippets(page)) {
      it(`${where(snippet)} runs`, async () => {
        await runner.run(snippet)
      })
    }
  }
})
