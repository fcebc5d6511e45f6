import { readFile } from 'node:fs/promises'
import { parseRules } from '@floodgate/core'
import { expect, it } from 'vitest'
import { ADAPTIVE_RULE_ID, ADAPTIVE_RULES, DEMO_RULES, EXPORT_COST, WORK_MS } from './rules.js'

it('the rules are valid, and an export costs what it holds the database for', () => {
  expect(() => parseRules(DEMO_RULES)).not.toThrow()
  const [adaptive] = parseRules(ADAPTIVE_RULES)
  expect(adaptive?.id).toBe(ADAPTIVE_RULE_ID)
  // An export (EXPORT_COST slots) fits under the lowest limit.
  expect(adaptive?.adaptive?.minLimit).toBeGreaterThanOrEqual(EXPORT_COST)
  expect(EXPORT_COST).toBe(WORK_MS.export / WORK_MS.items)
  expect(Number.isInteger(EXPORT_COST)).toBe(true)
})

it('docs/demo.md shows the rule exactly as the code has it', async () => {
  const page = await readFile(new URL('../../../docs/demo.md', import.meta.url), 'utf8')
  const block = /applies one rule[\s\S]*?```json\n([\s\S]*?)```/.exec(page)?.[1]
  expect(block).toBeDefined()
  expect(JSON.parse(block!)).toEqual(DEMO_RULES[0])
})

it('docs/demo.md shows the adaptive rule exactly as the code has it', async () => {
  const page = await readFile(new URL('../../../docs/demo.md', import.meta.url), 'utf8')
  const block = /third run applies[\s\S]*?```json\n([\s\S]*?)```/.exec(page)?.[1]
  expect(block).toBeDefined()
  expect(JSON.parse(block!)).toEqual(ADAPTIVE_RULES[0])
})
