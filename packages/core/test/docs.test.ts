import { describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { RulesValidationError, createLimiter, httpRules, parseRules } from '../src/index.js'
import { formatHeaders } from '../src/http/index.js'
import { errorCodes } from '../src/errors.js'
import { parseDuration, parseRulesDocument } from '../src/rules/index.js'
import { coveredSnippets, docsHarness, docSnippets, readDoc, where } from '@floodgate/docs-snippets'

// Runs every ```ts block of the docs pages below as a module: a snippet that no longer
// compiles or whose assertions fail breaks the build, so the docs cannot drift from the code.
// Rule sets shown as ```yaml or ```json on the data pages must pass the rule schema.
const pages = ['limiter.md', 'adaptive.md']
const dataPages = ['rules.md', 'adaptive.md']

describe('docs snippets', () => {
  const { runner, itTypeChecks } = docsHarness(new URL('..', import.meta.url))

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

  itTypeChecks()
})

// Pages without code: a snippet added to one must come with a test that runs it.
describe('pages without snippets', () => {
  for (const page of ['algorithms.md', 'failure-modes.md', 'error-codes.md']) {
    it(`docs/${page} shows no ts or js snippet`, () => {
      expect(coveredSnippets(page, 0)).toEqual([])
    })
  }
})

// docs/error-codes.md shows messages rather than code: each must be what Floodgate says.
describe('docs/error-codes.md', () => {
  const page = readDoc('error-codes.md')

  it('has a section for every code, and no other', () => {
    const sections = [...page.matchAll(/^## (FG_\w+)$/gm)].map((m) => m[1])
    expect(sections).toEqual(Object.keys(errorCodes))
  })

  it('shows the issues a rule set really gets', () => {
    const [shown] = coveredSnippets('error-codes.md', 1, [''])
    let error: unknown
    try {
      parseRules([
        { id: 'a', limit: 1, windw: '1s' },
        { id: 'export', limit: 1, window: '1s' },
        { id: 'c', limit: -1, window: '1s' },
        { id: 'export', limit: 1, window: '1s' },
      ])
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(RulesValidationError)
    const { issues, message } = error as RulesValidationError
    for (const line of shown!.code.split('\n')) expect(issues).toContain(line)
    expect(message).toMatch(
      / \(FG_ERR_RULES_INVALID, see @floodgate\/core\/docs\/error-codes\.md#fg_err_rules_invalid\)$/,
    )
  })

  it('quotes the OptionsError message httpRules throws', () => {
    const message = 'httpRules: intervalMs: expected an integer from 1 to 2147483647, got 0'
    expect(page).toContain(`\`${message}\``)
    expect(() => httpRules('http://127.0.0.1/rules', { intervalMs: 0 })).toThrow(message)
  })

  it('reads the durations it calls fine, and refuses the one it calls wrong', () => {
    expect(page).toContain("(`'1.5s'` is fine, `'0.0001s'` is not)")
    expect(parseDuration('1.5s')).toBe(1500)
    expect(() => parseDuration('0.0001s')).toThrow(/FG_ERR_DURATION_INVALID/)
  })
})

// The formats table of docs/limiter.md#response-headers states the fields one request gets:
// each row must be what formatHeaders answers for the rule and time the header names.
describe('docs/limiter.md: the response headers table', () => {
  const page = readDoc('limiter.md')
  const rowFields = (format: string): string[] => {
    const row = page.split('\n').find((line) => line.startsWith(`| \`'${format}'\``))
    if (row === undefined) throw new Error(`no row for '${format}'`)
    return [...row.split('|')[3]!.matchAll(/`([\w-]+: [^`]+)`/g)].map((m) => m[1]!)
  }

  it('names the rule and the moment its values are for', () => {
    expect(page).toContain(
      'one `fixed-window` rule, 100 per minute, one request at epoch second 1700000040, as its minute begins',
    )
  })

  for (const format of ['ietf', 'draft-7', 'legacy'] as const) {
    it(`the '${format}' row is what formatHeaders sends`, () => {
      const nowMs = 1_700_000_040_000
      const limiter = createLimiter({
        rules: [{ id: 'per-ip', algorithm: 'fixed-window', limit: 100, window: '1m' }],
        clock: () => nowMs,
      })
      const decision = limiter.check({ method: 'GET', path: '/', ip: '192.0.2.1', headers: {} })
      if (decision instanceof Promise) throw new Error('MemoryStore answers synchronously')
      const sent = formatHeaders(decision, { format }).map(([n, v]) => `${n}: ${v}`)
      expect(sent).toEqual(rowFields(format))
    })
  }
})
