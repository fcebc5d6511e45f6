import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { FloodgateError } from '@floodgate/core'
import { openPgliteDb } from '@floodgate/rules-service'
import { LOCK_FILE, lockDataDir } from '../src/db/data-dir-lock.js'
import { TOKENS } from './helpers.js'
import { capture, children, exited, run, serve, serveArgs } from './cli-process.js'

// One process per PGlite data directory: two processes on the same files would each keep their
// own copy, hand out the same revisions, and lose one side's writes on restart.
const dirs: string[] = []
const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'fg-rules-lock-'))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

const lockedError = (fn: () => unknown): FloodgateError => {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(FloodgateError)
    expect((err as FloodgateError).code).toBe('FG_ERR_DATA_DIR_LOCKED')
    return err as FloodgateError
  }
  throw new Error('expected FG_ERR_DATA_DIR_LOCKED')
}

describe('the data directory lock', () => {
  const alive = new Set([101])
  const as = (pid: number, hostname = 'here') => ({
    pid,
    hostname,
    isAlive: (p: number) => alive.has(p),
  })

  it('refuses a second holder while the first lives, and frees the directory on release', () => {
    const dir = tempDir()
    const first = lockDataDir(dir, as(101))
    const error = lockedError(() => lockDataDir(dir, as(202)))
    expect(error.message).toContain('in use by process 101')
    expect(error.message).toContain(join(dir, LOCK_FILE))
    expect(lockedError(() => lockDataDir(dir, as(101))).message).toContain(
      'this process has it open already',
    )
    first.release()
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false)
    lockDataDir(dir, as(202)).release()
  })

  it("replaces a dead process's lock, and a release never removes another holder's", () => {
    const dir = tempDir()
    const dead = lockDataDir(dir, as(303)) // never released: process 303 "crashed"
    const next = lockDataDir(dir, as(101))
    expect(next.replacedStale).toMatchObject({ pid: 303, hostname: 'here' })
    dead.release() // a late release by the dead holder's handle must not free 101's lock
    expect(JSON.parse(readFileSync(next.path, 'utf8'))).toMatchObject({ pid: 101 })
    expect(lockedError(() => lockDataDir(dir, as(202))).message).toContain('process 101')
    next.release()
  })

  it('refuses a lock from another machine, which it cannot check', () => {
    const dir = tempDir()
    lockDataDir(dir, as(303, 'elsewhere'))
    expect(lockedError(() => lockDataDir(dir, as(101))).message).toMatch(
      /locked by process 303 on elsewhere, which this machine cannot check/,
    )
  })

  it('treats an unreadable lock file as stale', () => {
    const dir = tempDir()
    writeFileSync(join(dir, LOCK_FILE), 'garbage')
    const lock = lockDataDir(dir, as(101))
    expect(lock.replacedStale).toMatchObject({ pid: 0 })
    lock.release()
  })

  it('refuses a second open of one directory in the same process', async () => {
    const dir = tempDir()
    const db = await openPgliteDb({ dataDir: dir })
    try {
      await expect(openPgliteDb({ dataDir: dir })).rejects.toMatchObject({
        code: 'FG_ERR_DATA_DIR_LOCKED',
      })
    } finally {
      await db.close()
    }
    const again = await openPgliteDb({ dataDir: dir })
    await again.close()
  }, 120_000)

  it('refuses a second process, and a killed process does not block the next start', async () => {
    const dir = tempDir()
    const write = (url: string, id: string) =>
      fetch(`${url}/v1/services/checkout/rules`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKENS.admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ id, limit: 1, window: '1m' }),
      })
    const first = await serve(dir)
    expect((await write(first.url, 'one')).status).toBe(201)

    const second = run(serveArgs(dir), { FLOODGATE_ADMIN_TOKEN: TOKENS.admin })
    const secondOutput = capture(second)
    expect(await exited(second)).toBe(1)
    expect(secondOutput()).toMatch(/FG_ERR_DATA_DIR_LOCKED/)
    expect(secondOutput()).toContain(`in use by process ${first.child.pid}`)
    expect(secondOutput()).not.toContain(TOKENS.admin)

    // The first process was never disturbed: it still writes, revision after revision.
    const two = await write(first.url, 'two')
    expect(await two.json()).toMatchObject({ revision: 2 })

    // Killed without a chance to release: its lock stays, but names a process that is gone.
    first.child.kill('SIGKILL')
    await exited(first.child)
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({
      pid: first.child.pid,
    })

    const third = await serve(dir)
    expect(third.output()).toContain(`replaced the lock of process ${first.child.pid}`)
    const set = await fetch(`${third.url}/v1/services/checkout/ruleset`)
    expect(((await set.json()) as { revision: number }).revision).toBe(2)
    third.child.kill('SIGTERM')
    expect(await exited(third.child)).toBe(0)
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false)
  }, 180_000)
})
