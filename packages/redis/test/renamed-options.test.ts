import { Redis } from 'ioredis'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { OptionsError, type Logger } from '@floodgate/core'
import { testRule } from '@floodgate/core/testing'
import { createRedisStore, type RedisStore } from '@floodgate/redis'
import { resolveSyncedOptions } from '../src/synced/options.js'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'

// Renamed options: RedisStore's timeoutMs is callTimeoutMs and its clock is timeSource;
// SyncedStore's timeoutMs is syncTimeoutMs. The old names work for one version, each with a
// FG_WRN_OPTION_RENAMED warning logged once per process.

const available = await redisAvailable()
const prefix = uniquePrefix('renamed')

function logger() {
  const log = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() }
  return log satisfies Logger
}

const renameWarnings = (log: ReturnType<typeof logger>): unknown[] =>
  log.warn.mock.calls
    .map(([obj]) => obj as { code?: string; option?: string; newName?: string })
    .filter((obj) => obj.code === 'FG_WRN_OPTION_RENAMED')

describe.skipIf(!available)('RedisStore: callTimeoutMs and timeSource, and their old names', () => {
  const stores: RedisStore[] = []
  const open = (options: Parameters<typeof createRedisStore>[0]): RedisStore => {
    const store = createRedisStore({ url: REDIS_URL, prefix, ...options })
    stores.push(store)
    return store
  }
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()))
    const admin = new Redis(REDIS_URL)
    await deletePrefix(admin, prefix)
    admin.disconnect()
  })

  it('keeps the deadline given under either name, warning once about timeoutMs', () => {
    const log = logger()
    expect(open({ callTimeoutMs: 40, logger: log }).settlesWithinMs).toBe(40)
    expect(renameWarnings(log)).toEqual([])
    expect(open({ timeoutMs: 40, logger: log }).settlesWithinMs).toBe(40)
    expect(open({ timeoutMs: 30, logger: log }).settlesWithinMs).toBe(30)
    expect(renameWarnings(log)).toEqual([
      { code: 'FG_WRN_OPTION_RENAMED', option: 'timeoutMs', newName: 'callTimeoutMs' },
    ])
  })

  it("decides with the caller's time under timeSource and under the old name clock", async () => {
    const log = logger()
    const rule = testRule('fixed-window', 1, 60_000)
    const now = 1_900_000_000_000
    for (const options of [{ timeSource: 'caller' as const }, { clock: 'caller' as const }]) {
      // Not about the deadline: one a round trip on a busy machine meets.
      const store = open({ ...options, callTimeoutMs: 2000, logger: log })
      await store.ready
      const entry = { rule, key: `k-${Math.random()}`, cost: 1, maxWaitMs: 0, shadow: false }
      // A window later by the caller's clock is a fresh window; by Redis TIME it would not be.
      expect((await store.consume([entry], now))[0]!.allowed).toBe(true)
      expect((await store.consume([entry], now))[0]!.allowed).toBe(false)
      expect((await store.consume([entry], now + 60_000))[0]!.allowed).toBe(true)
    }
    expect(renameWarnings(log)).toEqual([
      { code: 'FG_WRN_OPTION_RENAMED', option: 'clock', newName: 'timeSource' },
    ])
  })

  it('names the spelling given when its value is wrong, and refuses both names at once', () => {
    expect(() => open({ timeoutMs: 0 })).toThrow(/^timeoutMs: expected/)
    expect(() => open({ callTimeoutMs: 0 })).toThrow(/^callTimeoutMs: expected/)
    expect(() => open({ clock: 'server' as never })).toThrow(/^clock: expected 'redis'/)
    expect(() => open({ timeSource: 'server' as never })).toThrow(/^timeSource: expected 'redis'/)
    expect(() => open({ timeoutMs: 10, callTimeoutMs: 10 })).toThrow(OptionsError)
    expect(() => open({ clock: 'redis', timeSource: 'redis' })).toThrow(
      'clock and timeSource are the same option',
    )
  })
})

describe('SyncedStore options: syncTimeoutMs and its old name timeoutMs', () => {
  it('reads either name into the sync deadline, warning once about timeoutMs', () => {
    const log = logger() as unknown as Logger & ReturnType<typeof logger>
    expect(resolveSyncedOptions({ syncTimeoutMs: 200, logger: log }).timeoutMs).toBe(200)
    expect(resolveSyncedOptions({ timeoutMs: 300, logger: log }).timeoutMs).toBe(300)
    expect(resolveSyncedOptions({ timeoutMs: 400, logger: log }).timeoutMs).toBe(400)
    expect(renameWarnings(log)).toEqual([
      { code: 'FG_WRN_OPTION_RENAMED', option: 'timeoutMs', newName: 'syncTimeoutMs' },
    ])
  })

  it('names the spelling given when its value is wrong, and refuses both names at once', () => {
    expect(() => resolveSyncedOptions({ timeoutMs: 1.5 })).toThrow(/^timeoutMs: expected/)
    expect(() => resolveSyncedOptions({ timeoutMs: 100, syncTimeoutMs: 100 })).toThrow(
      'timeoutMs and syncTimeoutMs are the same option',
    )
  })
})
