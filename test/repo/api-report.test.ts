import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../../', import.meta.url))

describe('the public API report (api/*.api.md)', () => {
  it('matches what the packages export, so every change to the surface is seen in review', async () => {
    const run = promisify(execFile)(process.execPath, ['scripts/api-report.mjs', '--check'], {
      cwd: root,
    })
    // On a mismatch the script exits 1 and names the stale reports; rejecting fails this test.
    await expect(run).resolves.toMatchObject({ stderr: '' })
  })
})
