// `pnpm bench`: every benchmark, one after the other, each in its own process so one cannot
// warm or pollute the heap of the next. BENCH_ONLY picks some: core, adaptive, http, http-instructions,
// redis, redis-instructions, redis-node-instructions, synced-admission, rules-service, footprint.
import { spawnSync } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const parts = [
  ['core', 'core/run.mjs', 'Core: decisions per second and heap bytes per key (MemoryStore)'],
  [
    'adaptive',
    'core/adaptive.mjs',
    'Core: what an adaptive rule adds per request beside a token-bucket rule',
  ],
  ['http', 'http/run.mjs', 'HTTP: bare vs Floodgate vs peer middleware, per framework'],
  [
    'http-instructions',
    'http/instructions.mjs',
    'HTTP: instructions per response (callgrind)',
    'valgrind',
  ],
  ['redis', 'redis/run.mjs', 'Redis: RedisStore vs peer Redis stores'],
  [
    'redis-instructions',
    'redis/instructions.mjs',
    'Redis: instructions per script call, one call in flight (callgrind)',
    'valgrind',
  ],
  [
    'redis-node-instructions',
    'redis/node-instructions.mjs',
    'Redis: Node instructions per decision, one decision in flight (callgrind), beside the peers',
    'valgrind',
  ],
  [
    'synced-admission',
    'redis/synced-admission.mjs',
    'Redis: SyncedStore over-admission vs one shared bucket',
  ],
  [
    'rules-service',
    'rules-service/run.mjs',
    'Rules service: host polls per second (304s) on PGlite and PostgreSQL',
  ],
  [
    'footprint',
    'footprint/run.mjs',
    'Footprint: node_modules added and cold import time, each adapter vs express-rate-limit',
  ],
]
const onPath = (cmd) =>
  (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, cmd), constants.X_OK)
      return true
    } catch {
      return false
    }
  })
const only = process.env.BENCH_ONLY?.split(',')
let failed = 0
for (const [name, script, title, needs] of parts) {
  if (only && !only.includes(name)) continue
  console.log(`\n## ${title}  (node bench/${script})\n`)
  // An optional tool missing skips its part; it is not a failure of `pnpm bench`.
  if (needs && !onPath(needs)) {
    console.log(`Skipped: \`${needs}\` is not on PATH (apt-get install ${needs}).`)
    continue
  }
  const r = spawnSync(process.execPath, [fileURLToPath(new URL(script, import.meta.url))], {
    stdio: 'inherit',
  })
  if (r.status !== 0) {
    failed++
    console.error(`bench/${script} exited with ${r.status ?? r.signal}`)
  }
}
process.exit(failed > 0 ? 1 : 0)
