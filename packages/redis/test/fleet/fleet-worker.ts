// One app host of the fleet test: its own process, its own Redis connection. It sends
// requests for the parent's keys as fast as it can until the deadline the parent gives, and
// reports how many were admitted.
import {
  algorithms,
  type AlgorithmName,
  type CompiledRule,
  type ConsumeEntry,
} from '@floodgate/core/algorithms'
import { createRedisStore } from '../../src/index.js'

interface FleetRule {
  algorithm: AlgorithmName
  limit: number
  windowMs: number
  burst: number
  key: string
  stateId: string
}
interface Config {
  url: string
  prefix: string
  rules: FleetRule[]
  inFlight: number
}

const config = JSON.parse(process.env.FG_FLEET ?? '{}') as Config
const store = createRedisStore({ url: config.url, prefix: config.prefix, callTimeoutMs: 5000 })

const entryOf = (r: FleetRule): ConsumeEntry[] => [
  {
    // The store reads only the rule's stateId, algorithm name and params.
    rule: {
      stateId: r.stateId,
      algorithm: algorithms[r.algorithm],
      params: { limit: r.limit, windowMs: r.windowMs, burst: r.burst },
    } as unknown as CompiledRule,
    key: r.key,
    cost: 1,
    maxWaitMs: 0,
    shadow: false,
  },
]

async function run(stopAtMs: number): Promise<void> {
  const admitted = config.rules.map(() => 0)
  let failed = 0
  const loops = config.rules.flatMap((r, i) =>
    Array.from({ length: config.inFlight }, async () => {
      const entries = entryOf(r)
      while (Date.now() < stopAtMs) {
        try {
          const [res] = await store.consume(entries, 0)
          if (res!.allowed) admitted[i]!++
        } catch {
          failed++
        }
      }
    }),
  )
  await Promise.all(loops)
  process.send!({ admitted, failed })
  await store.close()
  process.exit(0)
}

await store.ready
process.on('message', (m: { stopAtMs: number }) => void run(m.stopAtMs))
process.send!('ready')
