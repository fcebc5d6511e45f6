import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { TOKENS } from './helpers.js'

// `floodgate-rules serve` as a process: flags and environment, a PGlite data directory that
// survives a restart, and a clean exit on SIGTERM. Runs the TypeScript source through tsx
// (the repository root's tsconfig maps @floodgate/* to sources), so no build is needed.
const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const CLI = fileURLToPath(new URL('../src/cli.ts', import.meta.url))

interface Running {
  child: ChildProcess
  url: string
  output: () => string
}

const children: ChildProcess[] = []

function run(args: string[], env: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env, DATABASE_URL: '', FLOODGATE_TOKENS_FILE: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  return child
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode)
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)))
}

/** Start `serve` and wait (bounded) for its "listening" log line. */
function serve(dataDir: string): Promise<Running> {
  const child = run(['serve', '--port', '0', '--data-dir', dataDir, '--service', 'checkout'], {
    FLOODGATE_ADMIN_TOKEN: TOKENS.admin,
  })
  let out = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no "listening" line within 50 s:\n${out}`)),
      50_000,
    )
    const onData = (chunk: Buffer) => {
      out += chunk.toString()
      const line = out.split('\n').find((l) => l.includes('floodgate rules service listening'))
      if (line) {
        clearTimeout(timer)
        resolve({ child, url: (JSON.parse(line) as { url: string }).url, output: () => out })
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`exited with ${code}:\n${out}`))
    })
  })
}

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
      rules: [{ id: 'api', match: '/api/**', rate: '100/1m' }],
    })
    second.child.kill('SIGTERM')
    expect(await exited(second.child)).toBe(0)
  }, 120_000)
})
