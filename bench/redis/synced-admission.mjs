// SyncedStore over-admission against one shared bucket: N hosts (each its own SyncedStore and
// connection, in this process) offer one client key far more than the limit, steadily or in
// bursts spaced further apart than the refill time. Every offered request is recorded with its
// time; one token bucket fed the same requests in time order is the reference.
//
//   node bench/redis/synced-admission.mjs            (REDIS_URL, RUNS=3, HOSTS=2,4,8, SYNC_MS=50,100,200)
import { randomBytes } from 'node:crypto'
import { algorithms } from '@floodgate/core/algorithms'
import { createSyncedStore } from '@floodgate/redis'
import { Redis } from 'ioredis'
import { ensureBuilt } from '../ensure-built.mjs'
import { median } from '../stats.mjs'

ensureBuilt(['core', 'redis'])

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const runs = Number(process.env.RUNS ?? 3)
const hostCounts = (process.env.HOSTS ?? '2,4,8').split(',').map(Number)
const syncs = (process.env.SYNC_MS ?? '50,100,200').split(',').map(Number)
// 100 per second, burst 20: the bucket refills from empty in 200 ms.
const params = { limit: 100, windowMs: 1000, burst: 20 }
const rule = {
  stateId: 'bench|token-bucket|100|1000|20',
  algorithm: algorithms['token-bucket'],
  params,
  rule: { id: 'bench' },
}
const STEADY_MS = 2000
const BURSTS = 4
const BURST_GAP_MS = 500
const BURST_MS = 10

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** What one token bucket admits of these offered times (sorted). */
function sharedAdmits(times) {
  const rate = params.limit / params.windowMs
  let tokens = params.burst
  let last = times[0] ?? 0
  let n = 0
  for (const t of times) {
    tokens = Math.min(params.burst, tokens + (t - last) * rate)
    last = t
    if (tokens >= 1 - 1e-9) {
      tokens -= 1
      n++
    }
  }
  return n
}

/** One run: returns { admitted, shared, perBurst } (perBurst: excess after each burst). */
async function run(hosts, syncMs, mode) {
  const prefix = `fg-bench-sa-${randomBytes(4).toString('hex')}`
  const stores = Array.from({ length: hosts }, () => createSyncedStore({ url, prefix, syncMs }))
  await Promise.all(stores.map((s) => s.ready))
  const key = 'client'
  const entries = [{ rule, key, cost: 1, maxWaitMs: 0, shadow: false }]
  const offered = []
  const admittedAt = []
  const t0 = Date.now()
  // Hosts take turns within a millisecond tick, two requests each, as a balancer spreads them.
  const offer = () => {
    for (let k = 0; k < 2; k++) {
      for (const s of stores) {
        const now = Date.now()
        offered.push(now - t0)
        if (s.consume(entries, now)[0].allowed) admittedAt.push(now - t0)
      }
    }
  }
  const bursts = []
  if (mode === 'steady') {
    while (Date.now() - t0 < STEADY_MS) {
      offer()
      await sleep(1)
    }
  } else {
    for (let b = 0; b < BURSTS; b++) {
      const start = Date.now()
      while (Date.now() - start < BURST_MS) {
        offer()
        await sleep(1)
      }
      await sleep(BURST_GAP_MS - (Date.now() - start))
      bursts.push({ offered: offered.length, admitted: admittedAt.length })
    }
  }
  await Promise.all(stores.map((s) => s.close()))
  const admin = new Redis(url)
  const keys = await admin.keys(`${prefix}:*`)
  if (keys.length > 0) await admin.del(...keys)
  admin.disconnect()
  const shared = sharedAdmits(offered)
  const perBurst = bursts.map((b) => b.admitted - sharedAdmits(offered.slice(0, b.offered)))
  return { admitted: admittedAt.length, shared, perBurst }
}

const pct = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(1)} %`
const range = (xs, f) => `${f(Math.min(...xs))} to ${f(Math.max(...xs))}`

console.log(
  `rule: token bucket ${params.limit}/s, burst ${params.burst}; steady: ${STEADY_MS} ms, 2 requests per host per ms;` +
    ` bursty: ${BURSTS} bursts of ${BURST_MS} ms every ${BURST_GAP_MS} ms; ${runs} runs each\n`,
)
console.log(
  '| hosts | syncMs | steady: over-admission, median (range) | bursty: excess after bursts 1..' +
    BURSTS +
    ', median (range after the first; after the last) |',
)
console.log(
  '| ----- | ------ | -------------------------------------- | ------------------------------------------------ |',
)
for (const hosts of hostCounts) {
  for (const syncMs of syncs) {
    const steady = []
    const bursty = []
    for (let i = 0; i < runs; i++) {
      const s = await run(hosts, syncMs, 'steady')
      steady.push((100 * (s.admitted - s.shared)) / s.shared)
      bursty.push((await run(hosts, syncMs, 'bursty')).perBurst)
    }
    const perBurst = Array.from({ length: BURSTS }, (_, b) => median(bursty.map((r) => r[b])))
    const first = bursty.map((r) => r[0])
    const last = bursty.map((r) => r[BURSTS - 1])
    console.log(
      `| ${hosts} | ${syncMs} | ${pct(median(steady))} (${range(steady, pct)}) | ${perBurst.join(', ')} (${range(first, String)}; ${range(last, String)}) |`,
    )
  }
}
