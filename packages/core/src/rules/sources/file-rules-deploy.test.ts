// How real deployments replace a rules file, against the real file system and the real
// fs.watch, with the poll turned off (pollIntervalMs: 0) so that only the watch is tested: a
// change the watch does not see would otherwise wait for the poll (5 s by default), or forever.
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { fileRules, type FileRulesSource } from './file-rules.js'

let dir: string
const sources: FileRulesSource[] = []

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floodgate-deploy-'))
})

afterEach(async () => {
  for (const s of sources.splice(0)) s.stop()
  await rm(dir, { recursive: true, force: true })
})

const rules = (id: string): string => JSON.stringify([{ id, rate: '10/s' }])

async function start(path: string, debounceMs = 10) {
  const source = fileRules(path, { pollIntervalMs: 0, debounceMs })
  sources.push(source)
  const seen: string[] = []
  const errors: string[] = []
  await source.start(
    (r) => seen.push(r.map((x) => x.id).join(',')),
    (e) => errors.push(e.message),
  )
  return { seen, errors, source }
}

const converges = async (seen: string[], id: string): Promise<void> =>
  vi.waitFor(() => expect(seen.at(-1)).toBe(id), { timeout: 3000, interval: 10 })

/** A Kubernetes ConfigMap volume: `rules.json -> ..data/rules.json`, `..data -> ..<stamp>`. */
async function configMapVolume(id: string): Promise<string> {
  await mkdir(join(dir, '..2026_01'))
  await writeFile(join(dir, '..2026_01', 'rules.json'), rules(id))
  await symlink('..2026_01', join(dir, '..data'))
  await symlink('..data/rules.json', join(dir, 'rules.json'))
  return join(dir, 'rules.json')
}

/** What the kubelet does on an update: a new stamped dir, an atomic swap of `..data`, the old dir removed. */
async function configMapUpdate(from: string, to: string, id: string): Promise<void> {
  await mkdir(join(dir, to))
  await writeFile(join(dir, to, 'rules.json'), rules(id))
  await symlink(to, join(dir, '..data_tmp'))
  await rename(join(dir, '..data_tmp'), join(dir, '..data'))
  await rm(join(dir, from), { recursive: true })
}

describe('fileRules follows the ways deployments replace a file', () => {
  it('a Kubernetes ConfigMap update (symlink swap of ..data), twice', async () => {
    const { seen, errors } = await start(await configMapVolume('one'))
    expect(seen).toEqual(['one'])
    await configMapUpdate('..2026_01', '..2026_02', 'two')
    await converges(seen, 'two')
    // The second update swaps away from the directory the first one brought in.
    await configMapUpdate('..2026_02', '..2026_03', 'three')
    await converges(seen, 'three')
    expect(seen).toEqual(['one', 'two', 'three'])
    expect(errors).toEqual([])
  })

  it('a ConfigMap file deleted in its stamped directory (reported), then written there again', async () => {
    const path = await configMapVolume('one')
    const { seen, errors } = await start(path)
    await rm(join(dir, '..2026_01', 'rules.json'))
    await vi.waitFor(() => expect(errors).toHaveLength(1), { timeout: 3000, interval: 10 })
    expect(errors[0]).toMatch(/cannot read rules file .*rules\.json: ENOENT/)
    await writeFile(join(dir, '..2026_01', 'rules.json'), rules('two'))
    await converges(seen, 'two')
  })

  it('a symlink to a file in another directory, saved there by rename', async () => {
    await mkdir(join(dir, 'real'))
    await mkdir(join(dir, 'app'))
    await writeFile(join(dir, 'real', 'rules.json'), rules('one'))
    await symlink(join(dir, 'real', 'rules.json'), join(dir, 'app', 'rules.json'))
    const { seen } = await start(join(dir, 'app', 'rules.json'))
    await writeFile(join(dir, 'real', '.rules.json.swp'), rules('two'))
    await rename(join(dir, 'real', '.rules.json.swp'), join(dir, 'real', 'rules.json'))
    await converges(seen, 'two')
  })

  it('the directory replaced by another, then the file edited in the new one', async () => {
    await mkdir(join(dir, 'conf'))
    await writeFile(join(dir, 'conf', 'rules.json'), rules('one'))
    const { seen } = await start(join(dir, 'conf', 'rules.json'))
    await mkdir(join(dir, 'conf.new'))
    await writeFile(join(dir, 'conf.new', 'rules.json'), rules('two'))
    await rm(join(dir, 'conf'), { recursive: true })
    await rename(join(dir, 'conf.new'), join(dir, 'conf'))
    await converges(seen, 'two')
    await writeFile(join(dir, 'conf', 'rules.json'), rules('three'))
    await converges(seen, 'three')
  })

  it('the file deleted, then created again', async () => {
    await writeFile(join(dir, 'rules.json'), rules('one'))
    const { seen, errors } = await start(join(dir, 'rules.json'))
    await rm(join(dir, 'rules.json'))
    await vi.waitFor(() => expect(errors).toHaveLength(1), { timeout: 3000, interval: 10 })
    expect(errors[0]).toMatch(/cannot read rules file .*rules\.json: ENOENT/)
    await writeFile(join(dir, 'rules.json'), rules('two'))
    await converges(seen, 'two')
    expect(seen).toEqual(['one', 'two'])
  })

  it('a directory busy with other files (a log written every 10 ms) does not hold a reload back', async () => {
    await writeFile(join(dir, 'rules.json'), rules('one'))
    // The default quiet time, ten times the log's pace.
    const { seen } = await start(join(dir, 'rules.json'), 100)
    let writing = true
    const busy = (async () => {
      // Bounded: at most 300 writes and 3 s, until the reload is seen.
      const until = Date.now() + 3000
      for (let i = 0; i < 300 && writing && Date.now() < until; i++) {
        await writeFile(join(dir, 'app.log'), `line ${i}\n`, { flag: 'a' })
        await new Promise((r) => setTimeout(r, 10))
      }
    })()
    await new Promise((r) => setTimeout(r, 30))
    await writeFile(join(dir, '.rules.json.tmp'), rules('two'))
    await rename(join(dir, '.rules.json.tmp'), join(dir, 'rules.json'))
    try {
      await vi.waitFor(() => expect(seen.at(-1)).toBe('two'), { timeout: 1000, interval: 5 })
    } finally {
      writing = false
      await busy
    }
  })
})
