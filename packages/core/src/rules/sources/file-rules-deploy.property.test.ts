import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { fileRules } from './file-rules.js'

// Random sequences of the ways a deployment replaces a rules file, against the real file system
// and the real fs.watch with the poll off, so a change the watch misses fails the property
// instead of waiting for the poll. Model: the rules in force are the last good set written
// (a bad or missing file keeps them), each new good set is delivered within the quiet time plus
// the read, and nothing else is ever delivered.

type Layout = 'plain' | 'configmap' | 'linked'
type Op =
  | { kind: 'rename-over'; good: boolean }
  | { kind: 'in-place'; good: boolean }
  | { kind: 'delete-recreate' }
  | { kind: 'swap' }

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('rename-over' as const), good: fc.boolean() }),
  fc.record({ kind: fc.constant('in-place' as const), good: fc.boolean() }),
  fc.constant({ kind: 'delete-recreate' as const }),
  fc.constant({ kind: 'swap' as const }),
)

let root: string
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'floodgate-deploy-prop-'))
})
afterAll(async () => {
  await rm(root, { recursive: true, force: true })
})

const good = (id: string): string => JSON.stringify([{ id, rate: '10/s' }])
const bad = '[{"id": '

describe('fileRules follows a deployment (property)', () => {
  it('ends each step on the last good set written, delivering nothing else', async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Layout>('plain', 'configmap', 'linked'),
        fc.array(op, { minLength: 1, maxLength: 5 }),
        async (layout, ops) => {
          const dir = join(root, `run-${run++}`)
          await mkdir(dir)
          // Where the content lives: the path itself, or the file a symlink leads to.
          let stamp = 0
          let real = join(dir, 'rules.json')
          const path = join(dir, 'rules.json')
          if (layout === 'configmap') {
            real = join(dir, `..s${stamp}`, 'rules.json')
            await mkdir(join(dir, `..s${stamp}`))
            await symlink(`..s${stamp}`, join(dir, '..data'))
            await symlink('..data/rules.json', path)
          } else if (layout === 'linked') {
            await mkdir(join(dir, 'real'))
            real = join(dir, 'real', 'rules.json')
            await symlink(real, path)
          }
          await writeFile(real, good('s0'))
          const written = new Set(['s0'])
          let inForce = 's0'
          const seen: string[] = []
          const source = fileRules(path, { pollIntervalMs: 0, debounceMs: 5 })
          try {
            await source.start(
              (rules) => seen.push(rules.map((r) => r.id).join(',')),
              () => {},
            )
            for (const [i, step] of ops.entries()) {
              const id = `s${i + 1}`
              const content = step.kind === 'delete-recreate' || step.kind === 'swap' || step.good
              const text = content ? good(id) : bad
              if (step.kind === 'rename-over') {
                await writeFile(`${real}.tmp`, text)
                await rename(`${real}.tmp`, real)
              } else if (step.kind === 'in-place') {
                await writeFile(real, text)
              } else if (step.kind === 'delete-recreate') {
                await rm(real)
                await writeFile(real, text)
              } else if (layout === 'configmap') {
                // The kubelet's update: a new stamped directory, ..data swapped, the old one gone.
                const from = `..s${stamp}`
                const to = `..s${++stamp}`
                await mkdir(join(dir, to))
                await writeFile(join(dir, to, 'rules.json'), text)
                await symlink(to, join(dir, '..data_tmp'))
                await rename(join(dir, '..data_tmp'), join(dir, '..data'))
                await rm(join(dir, from), { recursive: true })
                real = join(dir, to, 'rules.json')
              } else {
                // Elsewhere, a swap is a rename over.
                await writeFile(`${real}.tmp`, text)
                await rename(`${real}.tmp`, real)
              }
              if (content) {
                written.add(id)
                inForce = id
              }
              await vi.waitFor(() => expect(seen.at(-1)).toBe(inForce), {
                timeout: 2000,
                interval: 5,
              })
            }
            expect(seen.filter((s) => !written.has(s))).toEqual([])
          } finally {
            source.stop()
          }
        },
      ),
      { numRuns: 30 },
    )
  })
})
