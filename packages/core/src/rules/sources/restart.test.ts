import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createLimiter } from '../../limiter.js'
import type { Rule } from '../rule.js'
import { fileRules } from './file-rules.js'
import { httpRules } from './http-rules.js'
import type { RulesSource } from './rules-source.js'
import { staticRules } from './static-rules.js'

// A source outlives the limiter it was started for when the application builds its limiter
// (or its app) again with the same `rules` value: tests that build an app per test, a server
// restarted in the same process. Each start() is a new consumer that has no rules yet, so it
// must be handed the rules in force and told of a failure, whatever the previous run saw.

const cleanup: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const done of cleanup.splice(0).reverse()) await done()
})

const SET = [{ id: 'api', limit: 5, window: '1m' }]
const quiet = { debug() {}, info() {}, warn() {}, error() {} }

async function rulesServer(): Promise<{ url: string; server: Server; delayMs: number }> {
  const state = { url: '', server: createServer(), delayMs: 0 }
  state.server.on('request', (req, res) => {
    const answer = () => {
      if (req.headers['if-none-match'] === '"1"') {
        res.statusCode = 304
        return res.end()
      }
      res.setHeader('etag', '"1"')
      res.end(JSON.stringify({ service: 'api', revision: 1, rules: SET }))
    }
    if (state.delayMs > 0) setTimeout(answer, state.delayMs)
    else answer()
  })
  await new Promise<void>((resolve) => state.server.listen(0, '127.0.0.1', resolve))
  state.url = `http://127.0.0.1:${(state.server.address() as AddressInfo).port}/ruleset`
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        state.server.closeAllConnections()
        state.server.close(() => resolve())
      }),
  )
  return state
}

async function rulesFile(content: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-restart-'))
  cleanup.push(() => rm(dir, { recursive: true, force: true }))
  const path = join(dir, 'rules.json')
  await writeFile(path, content)
  return path
}

interface Run {
  delivered: Rule[][]
  errors: Error[]
}

async function startRun(source: RulesSource): Promise<Run> {
  const run: Run = { delivered: [], errors: [] }
  await source.start(
    (rules) => run.delivered.push(rules),
    (err) => run.errors.push(err),
  )
  return run
}

const sources: [string, () => Promise<RulesSource>][] = [
  ['staticRules', () => Promise.resolve(staticRules(SET))],
  ['fileRules', async () => fileRules(await rulesFile(JSON.stringify(SET)), { watch: false })],
  ['httpRules', async () => httpRules((await rulesServer()).url, { intervalMs: 60_000 })],
]

describe('a rules source started again after stop()', () => {
  it.each(sources)('%s hands the rules in force to each start', async (_name, make) => {
    const source = await make()
    cleanup.push(() => source.stop())
    for (let i = 0; i < 3; i++) {
      const run = await startRun(source)
      expect(run.errors).toEqual([])
      expect(run.delivered.map((rules) => rules.map((r) => r.id))).toEqual([['api']])
      source.stop()
    }
  })

  it.each(sources)('%s gives a new limiter with the same source its rules', async (_name, make) => {
    const source = await make()
    for (let i = 0; i < 2; i++) {
      const limiter = createLimiter({ rules: source, logger: quiet })
      await limiter.ready
      expect(limiter.rules.map((r) => r.id)).toEqual(['api'])
      await limiter.close()
    }
  })

  it('fileRules tells each start of a failure, even the one the previous run saw', async () => {
    const source = fileRules(await rulesFile('{ not json'), { watch: false })
    cleanup.push(() => source.stop())
    for (let i = 0; i < 2; i++) {
      const run = await startRun(source)
      expect(run.delivered).toEqual([])
      expect(run.errors.map((e) => e.message)).toEqual([expect.stringMatching(/not valid JSON/)])
      source.stop()
    }
  })

  it('httpRules tells each start of a failure, even the one the previous run saw', async () => {
    const source = httpRules('http://127.0.0.1:9/ruleset', { intervalMs: 60_000 })
    cleanup.push(() => source.stop())
    for (let i = 0; i < 2; i++) {
      const run = await startRun(source)
      expect(run.delivered).toEqual([])
      expect(run.errors).toHaveLength(1)
      source.stop()
    }
  })

  it('httpRules started again at once neither joins nor hears the poll stop() cut short', async () => {
    const server = await rulesServer()
    const source = httpRules(server.url, { intervalMs: 60_000 })
    cleanup.push(() => source.stop())
    server.delayMs = 200
    const first = startRun(source)
    await new Promise((resolve) => setTimeout(resolve, 50))
    source.stop()
    const second = await startRun(source)
    expect(second.errors).toEqual([])
    expect(second.delivered.map((rules) => rules.map((r) => r.id))).toEqual([['api']])
    expect((await first).delivered).toEqual([])
  })
})
