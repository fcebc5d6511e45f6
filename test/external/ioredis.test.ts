// @floodgate/redis with each ioredis major its peer range accepts, as npm users install it
// (`npm i @floodgate/redis ioredis`): the packed tarballs and one ioredis major in a
// throwaway project, then a real limiter decision through the Redis at REDIS_URL.
import { copyFile, mkdir, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, inject, it } from 'vitest'
import { packOf } from './packs.js'
import { run, runOk } from './run.js'

const packs = inject('packs')
const redisUrl = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')

/** Whether something at REDIS_URL answers PING (no client library: this project has none). */
function redisAnswers(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(Number(redisUrl.port || 6379), redisUrl.hostname)
    const done = (ok: boolean): void => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(1000, () => done(false))
    socket.on('error', () => done(false))
    socket.on('connect', () => socket.write('PING\r\n'))
    // An ACL-protected Redis answers -NOAUTH: it is there, and the URL's credentials are used.
    socket.on('data', (data) => done(/^(\+PONG|-NOAUTH)/.test(data.toString())))
  })
}

const available = await redisAnswers()
if (!available && process.env.CI === 'true') {
  throw new Error(`Redis is required under CI but ${redisUrl.href} did not answer`)
}

describe.skipIf(!available).concurrent.each([5, 6])('ioredis %i', (major) => {
  it('npm installs it beside the packed @floodgate/redis without a peer warning, and the store decides through Redis', async () => {
    const dir = join(packs.temp, `ioredis-${major}`)
    await mkdir(dir)
    const core = `file:${packOf(packs, '@floodgate/core').filename}`
    // Core's own dependency, from its tarball too (never a registry package of that name).
    const client = `file:${packOf(packs, '@floodgate/client').filename}`
    await writeFile(
      join(dir, 'package.json'),
      JSON.stringify({
        name: `floodgate-ioredis-${major}`,
        private: true,
        type: 'module',
        dependencies: {
          '@floodgate/core': core,
          '@floodgate/redis': `file:${packOf(packs, '@floodgate/redis').filename}`,
          ioredis: `^${major}.0.0`,
        },
        overrides: { '@floodgate/core': core, '@floodgate/client': client },
      }),
    )
    await copyFile(
      fileURLToPath(new URL('ioredis/check.mjs', import.meta.url)),
      join(dir, 'check.mjs'),
    )
    const install = await run(
      'npm',
      ['install', '--no-audit', '--no-fund', '--prefer-offline'],
      dir,
    )
    expect(install.code, install.output).toBe(0)
    expect(install.output).not.toMatch(/ERESOLVE|peer dep|conflicting peer/i)
    // A later install must not fail either (npm re-checks the tree against the peer ranges).
    const again = await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], dir)
    expect(again.code, again.output).toBe(0)

    const out = await runOk(process.execPath, ['check.mjs'], dir, {
      ...process.env,
      REDIS_URL: redisUrl.href,
    })
    const result = JSON.parse(out.trim().split('\n').at(-1)!) as {
      version: string
      decisions: number[]
    }
    expect(result.version.split('.')[0]).toBe(String(major))
    expect(result.decisions).toEqual([200, 429])
  })
})
