// One app host of the synced fleet test: its own process and SyncedStore. From the parent's
// start time to its stop time it offers about two requests per millisecond for one client
// key (far more than the fleet's limit), decided locally, and reports when it admitted and
// how regularly it synced.
import {
  algorithms,
  type AlgorithmName,
  type CompiledRule,
  type ConsumeEntry,
} from '@floodgate/core/algorithms'
import { createSyncedStore } from '../../src/index.js'

interface Config {
  url: string
  prefix: string
  syncMs: number
  rule: {
    algorithm: AlgorithmName
    limit: number
    windowMs: number
    burst: number
    stateId: string
  }
  key: string
  /** Offer only in bursts of this many ms (default: all the time)... */
  burstMs?: number
  /** ...starting every this many ms. */
  burstEveryMs?: number
}

const config = JSON.parse(process.env.FG_FLEET ?? '{}') as Config
const store = createSyncedStore({ url: config.url, prefix: config.prefix, syncMs: config.syncMs })

// The store reads only the rule's stateId, algorithm and params.
const rule = {
  stateId: config.rule.stateId,
  algorithm: algorithms[config.rule.algorithm],
  params: { limit: config.rule.limit, windowMs: config.rule.windowMs, burst: config.rule.burst },
  rule: { id: config.rule.stateId },
} as unknown as CompiledRule
const entries: ConsumeEntry[] = [{ rule, key: config.key, cost: 1, maxWaitMs: 0, shadow: false }]

// The gap between two finished sync rounds is how stale this host's view of the others can get.
let lastSyncMs = 0
let maxGapMs = 0
let syncs = 0
const sync = store.syncNow.bind(store)
store.syncNow = async () => {
  await sync()
  const t = Date.now()
  if (lastSyncMs > 0) maxGapMs = Math.max(maxGapMs, t - lastSyncMs)
  lastSyncMs = t
  syncs++
}

/** Requests one host offers in a burst at the least (4 hosts × 8 = 32 > 21, one bucket's burst). */
const MIN_PER_BURST = 8

const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1))

async function run(originMs: number, startAtMs: number, stopAtMs: number): Promise<void> {
  while (Date.now() < startAtMs) await tick()
  lastSyncMs = 0
  let admitted = 0
  let offered = 0
  const times: number[] = []
  const every = config.burstEveryMs ?? 1
  const burstMs = config.burstMs ?? every
  // A burst lasts `burstMs`, and on a busy machine (a timer tick of several ms) longer, until
  // it has offered MIN_PER_BURST: a burst must offer more than one shared bucket admits.
  let burst = -1
  let offeredInBurst = 0
  while (Date.now() < stopAtMs) {
    const sinceStart = Date.now() - startAtMs
    const thisBurst = Math.floor(sinceStart / every)
    if (thisBurst !== burst && sinceStart % every < burstMs) {
      burst = thisBurst
      offeredInBurst = 0
    }
    const inWindow = sinceStart % every < burstMs
    if (!inWindow && !(thisBurst === burst && offeredInBurst < MIN_PER_BURST)) {
      await tick()
      continue
    }
    offeredInBurst += 2
    for (let i = 0; i < 2; i++) {
      offered++
      const now = Date.now()
      if (now >= stopAtMs) break
      if (store.consume(entries, now)[0]!.allowed) {
        admitted++
        times.push(now - originMs)
      }
    }
    await tick()
  }
  const failedSyncs = store.failedSyncs
  await store.close()
  process.send!({ admitted, offered, times, maxGapMs, syncs, failedSyncs })
  process.exit(0)
}

await store.ready
process.on('message', (m: { originMs: number; startAtMs: number; stopAtMs: number }) => {
  void run(m.originMs, m.startAtMs, m.stopAtMs)
})
process.send!('ready')
