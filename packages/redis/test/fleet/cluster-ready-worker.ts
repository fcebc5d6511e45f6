// One fresh app host on a Redis Cluster: it creates a store, awaits `ready`, then at once
// sends 64 checks concurrently and reports how many were not judged (failed open, or for a
// SyncedStore, a failed sync or a logged Redis error).
import { algorithms, type CompiledRule, type ConsumeEntry } from '@floodgate/core/algorithms'
import { type Logger } from '@floodgate/core'
import { createRedisStore, createSyncedStore } from '../../src/index.js'

interface Config {
  kind: 'redis' | 'synced'
  seeds: { host: string; port: number }[]
  prefix: string
}

const config = JSON.parse(process.env.FG_FLEET ?? '{}') as Config
const rule = {
  stateId: 'ready|token-bucket|100|60000|100',
  algorithm: algorithms['token-bucket'],
  params: { limit: 100, windowMs: 60_000, burst: 100 },
} as unknown as CompiledRule
const entries = (i: number): ConsumeEntry[] => [
  { rule, key: `client-${process.pid}-${i}`, cost: 1, maxWaitMs: 0, shadow: false },
]
const errors: string[] = []
const logger = {
  warn: (fields: { err?: unknown }, msg: string) =>
    errors.push(`${msg}: ${String((fields.err as Error | undefined)?.message)}`),
  info: () => {},
  error: () => {},
  debug: () => {},
} as unknown as Logger

async function redisHost(): Promise<{ unjudged: number; errors: string[] }> {
  const store = createRedisStore({
    cluster: config.seeds,
    prefix: config.prefix,
    callTimeoutMs: 500,
  })
  await store.ready
  const settled = await Promise.allSettled(
    Array.from({ length: 64 }, (_, i) => store.consume(entries(i), 0)),
  )
  for (const s of settled) if (s.status === 'rejected') errors.push(String(s.reason))
  await store.close()
  return { unjudged: settled.filter((s) => s.status === 'rejected').length, errors }
}

async function syncedHost(): Promise<{ unjudged: number; errors: string[] }> {
  const store = createSyncedStore({
    cluster: config.seeds,
    prefix: config.prefix,
    syncMs: 600_000,
    logger,
  })
  await store.ready
  for (let i = 0; i < 64; i++) store.consume(entries(i), Date.now())
  await store.syncNow()
  const unjudged = store.failedSyncs
  await store.close()
  return { unjudged, errors }
}

const report = await (config.kind === 'redis' ? redisHost() : syncedHost())
process.send!(report)
process.exit(0)
