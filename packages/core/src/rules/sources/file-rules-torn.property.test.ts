import type * as fsPromises from 'node:fs/promises'
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'

// A rules file read while it is still being written (`cp` over it, a tool that writes in
// chunks): the read gets the first rules of a YAML list, which is itself a valid, smaller list.
// The timing is injected: readFile returns what the file held, then the writer finishes before
// the source looks again. Model: the sets delivered are whole sets written, never a prefix of
// one, and the source ends on the last set written.

const hooks: { afterRead: (() => Promise<void>) | undefined } = { afterRead: undefined }

vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof fsPromises>()
  return {
    ...real,
    readFile: async (...args: Parameters<typeof real.readFile>) => {
      const bytes = await real.readFile(...args)
      const hook = hooks.afterRead
      hooks.afterRead = undefined
      if (hook) await hook()
      return bytes
    },
  }
})

const { fileRules } = await import('./file-rules.js')

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floodgate-torn-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

const yamlOf = (ids: readonly string[]): string[] => ids.map((id) => `- id: ${id}\n  rate: 10/s\n`)

describe('fileRules never applies a file caught mid-write', () => {
  it('delivers whole sets only, and converges to the last one (property)', async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(
        // Each write: how many rules, and after how many of them the reader looks.
        fc.array(
          fc
            .integer({ min: 2, max: 6 })
            .chain((n) =>
              fc.record({ n: fc.constant(n), cut: fc.integer({ min: 1, max: n - 1 }) }),
            ),
          { minLength: 1, maxLength: 4 },
        ),
        async (writes) => {
          const path = join(dir, `rules-${run++}.yaml`)
          await writeFile(path, yamlOf(['start']).join(''))
          const source = fileRules(path, { watch: false, pollIntervalMs: 0, debounceMs: 1 })
          const seen: string[] = []
          const whole = new Set(['start'])
          try {
            await source.start(
              (rules) => seen.push(rules.map((r) => r.id).join(',')),
              (e) => seen.push(`error: ${e.message}`),
            )
            for (const [w, { n, cut }] of writes.entries()) {
              const lines = yamlOf(Array.from({ length: n }, (_, i) => `w${w}-r${i}`))
              whole.add(lines.map((_, i) => `w${w}-r${i}`).join(','))
              await writeFile(path, lines.slice(0, cut).join(''))
              hooks.afterRead = () => appendFile(path, lines.slice(cut).join(''))
              await source.reload()
              const last = [...whole].at(-1)
              await vi.waitFor(() => expect(seen.at(-1)).toBe(last), {
                timeout: 2000,
                interval: 2,
              })
            }
            expect(seen.filter((s) => !whole.has(s))).toEqual([])
          } finally {
            hooks.afterRead = undefined
            source.stop()
          }
        },
      ),
      { numRuns: 25 },
    )
  })
})
