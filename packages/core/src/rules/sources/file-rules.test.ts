import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { OptionsError, RulesValidationError } from '../../errors.js'
import type { Logger } from '../../logger.js'
import type { Rule, RuleMatch } from '../rule.js'
import { fileRules, type FileRulesOptions, type FileRulesSource } from './file-rules.js'
import { staticRules } from './static-rules.js'

let dir: string
const sources: FileRulesSource[] = []

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floodgate-rules-'))
})

afterEach(async () => {
  for (const s of sources.splice(0)) s.stop()
  await rm(dir, { recursive: true, force: true })
})

function spyLogger() {
  return { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() } satisfies Logger
}

async function setup(
  name: string,
  content: string | Uint8Array | undefined,
  options: FileRulesOptions = {},
) {
  const path = join(dir, name)
  if (content !== undefined) await writeFile(path, content)
  const logger = spyLogger()
  const source = fileRules(path, { watch: false, logger, ...options })
  sources.push(source)
  const delivered: { rules: Rule[]; revision: string | undefined }[] = []
  const errors: Error[] = []
  await source.start(
    (rules, revision) => delivered.push({ rules, revision }),
    (err) => errors.push(err),
  )
  return { path, source, logger, delivered, errors }
}

const yamlRules = `
# rules for the API
revision: r1
rules:
  - id: api
    match: /api/**
    key: user
    rate: 100/1m
  - id: export
    match: POST /export
    limit: 5
    window: 1h
    onLimit: { action: reject, status: 503 }
`

describe('fileRules', () => {
  it('loads YAML, with the revision the file names', async () => {
    const { delivered, errors } = await setup('rules.yaml', yamlRules)
    expect(errors).toEqual([])
    expect(delivered).toHaveLength(1)
    expect(delivered[0]!.revision).toBe('r1')
    expect(delivered[0]!.rules.map((r) => [r.id, r.limit, r.windowMs])).toEqual([
      ['api', 100, 60_000],
      ['export', 5, 3_600_000],
    ])
  })

  it('loads a JSON list, with a content hash as revision', async () => {
    const { delivered } = await setup('rules.json', JSON.stringify([{ id: 'a', rate: '10/s' }]))
    expect(delivered[0]!.rules[0]!.id).toBe('a')
    expect(delivered[0]!.revision).toMatch(/^[0-9a-f]{12}$/)
  })

  it('reloads a changed file and ignores an unchanged one', async () => {
    const { path, source, delivered } = await setup(
      'rules.json',
      JSON.stringify([{ id: 'a', rate: '10/s' }]),
    )
    await source.reload()
    expect(delivered).toHaveLength(1)
    await writeFile(path, JSON.stringify([{ id: 'a', rate: '20/s' }]))
    await source.reload()
    expect(delivered).toHaveLength(2)
    expect(delivered[1]!.rules[0]!.limit).toBe(20)
  })

  it('keeps the previous rules when the file turns bad, reports once, and recovers', async () => {
    const { path, source, delivered, errors, logger } = await setup('rules.yaml', yamlRules)
    await writeFile(path, 'rules:\n  - id: api\n    limit: -1\n    window: 1s\n')
    await source.reload()
    await source.reload()
    expect(delivered).toHaveLength(1)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toBeInstanceOf(RulesValidationError)
    expect((errors[0] as RulesValidationError).issues).toEqual([
      'rules[0].limit: expected a positive integer, got -1',
    ])
    expect(logger.warn).toHaveBeenCalledTimes(1)

    await writeFile(path, 'rules: [unclosed')
    await source.reload()
    expect(errors).toHaveLength(2)
    expect(errors[1]!.message).toMatch(/is not valid YAML/)

    await writeFile(path, yamlRules.replace('100/1m', '50/1m'))
    await source.reload()
    expect(delivered).toHaveLength(2)
    expect(delivered[1]!.rules[0]!.limit).toBe(50)
    expect(logger.info).toHaveBeenCalledWith(expect.anything(), 'rules source recovered')
  })

  // What editors and shells on Windows write: a UTF-8 byte order mark (Notepad, PowerShell's
  // Set-Content -Encoding UTF8), or UTF-16 with one (Windows PowerShell's `>`).
  const encodings: [string, (text: string) => Uint8Array][] = [
    ['UTF-8', (t) => Buffer.from(t, 'utf8')],
    ['UTF-8 with a byte order mark', (t) => Buffer.from(`\uFEFF${t}`, 'utf8')],
    ['UTF-16LE with a byte order mark', (t) => Buffer.from(`\uFEFF${t}`, 'utf16le')],
    ['UTF-16BE with a byte order mark', (t) => Buffer.from(`\uFEFF${t}`, 'utf16le').swap16()],
  ]
  const formats: [string, string][] = [
    ['rules.json', JSON.stringify({ revision: 'r1', rules: [{ id: 'café', rate: '10/s' }] })],
    ['rules.yaml', 'revision: r1\nrules:\n  - id: café\n    rate: 10/s\n'],
  ]
  it.each(
    encodings.flatMap(([encoding, encode]) =>
      formats.map(
        ([name, text]) => [name, encoding, encode(text.replace('café', 'cafe'))] as const,
      ),
    ),
  )('reads %s saved as %s', async (name, _encoding, bytes) => {
    const { delivered, errors } = await setup(name, bytes)
    expect(errors).toEqual([])
    expect(delivered.map((d) => [d.revision, d.rules.map((r) => r.id)])).toEqual([['r1', ['cafe']]])
  })

  it('refuses a file saved in another encoding than UTF-8, keeping the rules and naming the line', async () => {
    const good =
      'rules:\n  - id: api\n    rate: 10/s\n    match: { headers: { x-city: caf\u00e9 } }\n'
    const { path, source, delivered, errors } = await setup('rules.yaml', good)
    // The same rules saved as Latin-1 (Windows-1252): 'é' is the one byte 0xE9.
    await writeFile(path, Buffer.from(good.replace('rate: 10/s', 'rate: 5/s'), 'latin1'))
    await source.reload()
    await source.reload()
    expect(delivered.map((d) => (d.rules[0]!.match as RuleMatch).headers)).toEqual([
      { 'x-city': 'caf\u00e9' },
    ])
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringContaining(
        `rules file ${path} is not valid UTF-8 at line 4, column 36 (byte 68)`,
      ),
    ])
    await writeFile(path, good.replace('rate: 10/s', 'rate: 5/s'))
    await source.reload()
    expect(delivered.map((d) => d.rules[0]!.limit)).toEqual([10, 5])
  })

  it('reports invalid JSON as JSON', async () => {
    const { errors } = await setup('rules.json', '[{"id": ')
    expect(errors[0]!.message).toMatch(/rules file .*rules\.json is not valid JSON/)
  })

  it('refuses a JSON file that gives a key twice in one object, naming it', async () => {
    const { errors, delivered } = await setup(
      'dup.json',
      '{"rules":[{"id":"a","limit":5,"window":"1m","window":"1s"}]}',
    )
    expect(delivered).toHaveLength(0)
    expect(errors[0]!.message).toMatch(
      /rules file .*dup\.json is not valid JSON: it gives a key twice in one object, at rules\[0\]\.window \(which value counts would depend on the parser\); give each key once/,
    )
  })

  it('starts without a file, reports it once, and loads it when it appears', async () => {
    const { path, source, delivered, errors } = await setup('later.yaml', undefined)
    expect(errors).toHaveLength(1)
    expect(errors[0]!.message).toMatch(/cannot read rules file .*later\.yaml/)
    await source.reload()
    expect(errors).toHaveLength(1)
    await writeFile(path, yamlRules)
    await source.reload()
    expect(delivered).toHaveLength(1)
  })

  it('notices a change on its own (watch or poll)', async () => {
    const { path, delivered } = await setup('watched.yaml', yamlRules, {
      watch: true,
      pollIntervalMs: 20,
      debounceMs: 5,
    })
    await writeFile(path, yamlRules.replace('100/1m', '7/1m'))
    await vi.waitFor(() => expect(delivered).toHaveLength(2), { timeout: 5000, interval: 10 })
    expect(delivered[1]!.rules[0]!.limit).toBe(7)
  })

  it('delivers nothing after stop', async () => {
    const { path, source, delivered } = await setup('rules.yaml', yamlRules, {
      watch: true,
      pollIntervalMs: 10,
    })
    source.stop()
    await writeFile(path, yamlRules.replace('100/1m', '7/1m'))
    await source.reload()
    expect(delivered).toHaveLength(1)
  })

  it('refuses bad options', () => {
    expect(() => fileRules('x.yaml', { pollIntervalMs: -1 })).toThrow(OptionsError)
    expect(() => fileRules('x.yaml', { debounceMs: 2 ** 31 })).toThrow(/debounceMs/)
  })
})

describe('staticRules', () => {
  it('validates at construction and delivers once', async () => {
    expect(() => staticRules([{ id: 'a', limit: 0, window: '1s' }])).toThrow(RulesValidationError)
    const onRules = vi.fn()
    await staticRules([{ id: 'a', rate: '1/s' }]).start(onRules, () => {})
    expect(onRules).toHaveBeenCalledTimes(1)
    expect((onRules.mock.calls[0]![0] as Rule[])[0]!.id).toBe('a')
  })
})
