// Decisions per second of Floodgate's MemoryStore and full check(), beside the peers'
// in-memory stores, in one run: interleaved rounds, medians. Then heap bytes per key.
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { pathToFileURL } from 'node:url'
import { join, resolve } from 'node:path'
import { checkContenders, checkWith, plainBucket, storeContenders } from './contenders.mjs'
import { median, pairedRatios, ratioRange } from '../stats.mjs'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 400)
const HEAP_KEYS = Number(process.env.BENCH_HEAP_KEYS ?? 1_000_000)
// BENCH_CORE_B=<dist of another build of packages/core>: its check() timed in the same rounds.
// BENCH_CHECK_ONLY=1: only the plain bucket and the check() rows (no peers, no heap table).
const CORE_B = process.env.BENCH_CORE_B
const CHECK_ONLY = process.env.BENCH_CHECK_ONLY === '1'

function ipKeys(n) {
  const keys = new Array(n)
  for (let i = 0; i < n; i++) keys[i] = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`
  return keys
}

async function measure(op, sync, keys) {
  const n = keys.length
  let ops = 0
  const start = performance.now()
  const deadline = start + ROUND_MS
  let i = 0
  while (performance.now() < deadline) {
    if (sync) {
      for (let j = 0; j < 2000; j++) op(i++ % n)
    } else {
      for (let j = 0; j < 2000; j++) await op(i++ % n)
    }
    ops += 2000
  }
  return ops / ((performance.now() - start) / 1000)
}

async function table(title, keys, contenders) {
  const rates = new Map(contenders.map((c) => [c.name, []]))
  const ops = contenders.map((c) => ({ c, op: c.make(keys) }))
  // Warm-up fills the 100k-key tables and lets the JIT settle.
  for (const { c, op } of ops) await measure(op, c.sync, keys)
  for (let r = 0; r < ROUNDS; r++) {
    for (const { c, op } of ops) rates.get(c.name).push(await measure(op, c.sync, keys))
  }
  const rows = contenders.map((c) => ({ name: c.name, perSec: median(rates.get(c.name)) }))
  // Each round's rate over the plain bucket's in the same round: steadier on a shared machine.
  const plainRates = rates.get(plainBucket.name)
  const paired = new Map(
    contenders.map((c) => [c.name, pairedRatios(rates.get(c.name), plainRates)]),
  )
  return { title, rows, paired }
}

function print({ title, rows, paired }) {
  const peers = rows.filter((r) => !r.name.startsWith('floodgate') && r.name !== plainBucket.name)
  // No peers under BENCH_CHECK_ONLY: that column reads "-".
  const best = peers.length > 0 ? Math.max(...peers.map((r) => r.perSec)) : NaN
  const plain = rows.find((r) => r.name === plainBucket.name).perSec
  console.log(`\n### ${title}\n`)
  console.log(
    '| contender | decisions/s | vs best peer | vs plain bucket | paired vs plain (range) |',
  )
  console.log('| --- | ---: | ---: | ---: | ---: |')
  for (const r of rows) {
    const p = paired.get(r.name)
    console.log(
      `| ${r.name} | ${(r.perSec / 1e6).toFixed(2)} M | ${Number.isNaN(best) ? '-' : `${(r.perSec / best).toFixed(2)}x`} | ${(r.perSec / plain).toFixed(2)}x | ${ratioRange(p)} |`,
    )
  }
}

console.log(
  `# Core decisions per second (Node ${process.version}, ${ROUNDS} rounds of ${ROUND_MS} ms, median)`,
)
const others = CHECK_ONLY ? [] : storeContenders
const all = [...others, plainBucket, ...checkContenders]
if (CORE_B) {
  const b = await import(pathToFileURL(join(resolve(CORE_B), 'index.js')).href)
  all.push(
    checkWith(
      'floodgate check() of BENCH_CORE_B (clock read once per turn)',
      undefined,
      b.createLimiter,
    ),
  )
}
print(await table('One hot key', ['10.0.0.1'], all))
print(await table('100k keys, round robin', ipKeys(100_000), all))

if (CHECK_ONLY) process.exit(0)
console.log(`\n### Heap bytes per key at ${HEAP_KEYS.toLocaleString('en')} keys\n`)
console.log('| contender | bytes/key |')
console.log('| --- | ---: |')
const heapScript = fileURLToPath(new URL('./heap.mjs', import.meta.url))
for (const c of storeContenders.filter((x) => !x.name.includes('time given'))) {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', '--max-old-space-size=8192', heapScript, c.name, String(HEAP_KEYS)],
    {
      encoding: 'utf8',
    },
  )
  console.log(`| ${c.name} | ${Number(out.trim()).toFixed(0)} |`)
}
