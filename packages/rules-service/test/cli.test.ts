import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { TOKENS } from './helpers.js'
import { children, exited, run, serve } from './cli-process.js'

// `floodgate-rules serve` as a process: flags and environment, a PGlite data directory that
// survives a restart, and a clean exit on SIGTERM.
describe('floodgate-rules CLI', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'fg-rules-cli-'))

  afterAll(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('prints usage, and exits 2 on an unknown command', async () => {
    const help = run(['--help'])
    let text = ''
    help.stdout!.on('data', (c: Buffer) => (text += c.toString()))
    expect(await exited(help)).toBe(0)
    expect(text).toMatch(/Usage: floodgate-rules serve/)
    expect(await exited(run(['launch']))).toBe(2)
  })

  it('serves from a data directory that survives a restart, and stops on SIGTERM', async () => {
    const first = await serve(dataDir)
    const created = await fetch(`${first.url}/v1/services/checkout/rules`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'api', match: '/api/**', rate: '100/1m' }),
    })
    expect(created.status).toBe(201)
    first.child.kill('SIGTERM')
    expect(await exited(first.child)).toBe(0)
    expect(first.output()).not.toContain(TOKENS.admin)

    const second = await serve(dataDir)
    const set = await fetch(`${second.url}/v1/services/checkout/ruleset`)
    expect(await set.json()).toEqual({
      service: 'checkout',
      revision: 1,
      version: expect.stringMatching(/^1-[0-9a-f]{32}$/),
      rules: [{ id: 'api', match: '/api/**', rate: '100/1m' }],
    })
    second.child.kill('SIGTERM')
    expect(await exited(second.child)).toBe(0)
  }, 120_000)
})
