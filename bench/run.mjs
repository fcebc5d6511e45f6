// `pnpm bench`: every benchmark, one after the other, each in its own process so one cannot
// warm or pollute the heap of the next. BENCH_ONLY=core,http,redis picks some.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const parts = [
  ['core', 'core/run.mjs', 'Core: decisions per second and heap bytes per key (MemoryStore)'],
  ['http', 'http/run.mjs', 'HTTP: bare vs Floodgate vs peer middleware, per framework'],
  ['redis', 'redis/run.mjs', 'Redis: RedisStore vs peer Redis stores'],
]
const only = process.env.BENCH_ONLY?.split(',')
let failed = 0
for (const [name, script, title] of parts) {
  if (only && !only.includes(name)) continue
  console.log(`\n## ${title}  (node bench/${script})\n`)
  const r = spawnSync(process.execPath, [fileURLToPath(new URL(script, import.meta.url))], {
    stdio: 'inherit',
  })
  if (r.status !== 0) {
    failed++
    console.error(`bench/${script} exited with ${r.status ?? r.signal}`)
  }
}
process.exit(failed > 0 ? 1 : 0)
