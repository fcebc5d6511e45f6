// Instructions and estimated cycles per decision of `check()` (MemoryStore, the default clock)
// and of the plain token bucket over a Map that bench/core/run.mjs uses as its reference,
// counted by valgrind's callgrind with its cache simulator: a count does not depend on what
// else the machine runs, where timings on a shared 2-core machine move by 30 % and more.
//
//   node bench/core/check-instructions.mjs     # needs valgrind; BENCH_KEYS=1,100000 BENCH_JOBS=2
//   CORE_A=<dir>/dist CORE_B=<dir>/dist node bench/core/check-instructions.mjs
//
// Each contender runs in a fresh `node` under callgrind twice: a warm-up (every key seen
// several times, spread over event-loop turns of 2,000 decisions as in run.mjs, so the clock
// shares one reading per turn), then N1 or N2 more decisions. Start-up, loading and warm-up are
// the same in both runs, so (count(N2) - count(N1)) / (N2 - N1) is the steady-state count per
// decision. "est. cycles" is callgrind's estimate: instructions + 10 per L1 miss + 100 per
// last-level miss. CORE_A / CORE_B name the built dist of other checkouts of packages/core to
// count side by side (default: this checkout's). KEEP=<dir> keeps the callgrind files (run with
// PROFILE=1 for per-function figures: node bench/callgrind-functions.mjs <file> <N2-N1>).
import { execFile, spawnSync } from 'node:child_process'
import { promisify } from 'node:util'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { ensureBuilt } from '../ensure-built.mjs'
import { plainBucket } from './plain-bucket.mjs'

const [N1, N2] = (process.env.BENCH_OPS ?? '100000,300000').split(',').map(Number)
const KEY_COUNTS = (process.env.BENCH_KEYS ?? '1,100000').split(',').map(Number)
const self = fileURLToPath(import.meta.url)
const CHUNK = 2000
// A limit nothing reaches within a run, as in contenders.mjs.
const HUGE = 1_000_000_000

if (process.argv[2] === 'run') {
  // The counted child: one contender, `keys` clients round robin, warm-up then `n` decisions.
  const [, , , which, core, keyCount, n] = process.argv
  const k = Number(keyCount)
  const ips = Array.from(
    { length: k },
    (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
  )
  const facts = ips.map((ip) => ({ method: 'GET', path: '/api/items', ip, headers: {} }))
  let op
  if (which === 'plain') {
    op = plainBucket.make(ips)
  } else {
    const { createLimiter } = await import(pathToFileURL(join(core, 'index.js')).href)
    const limiter = createLimiter({
      rules: [{ id: 'per-ip', match: { methods: ['GET'] }, key: 'ip', limit: HUGE, window: HUGE }],
    })
    op = (i) => limiter.check(facts[i]).allowed
  }
  let i = 0
  let sink = 0
  const turn = () => {
    for (let j = 0; j < CHUNK; j++) if (op(i++ % k)) sink++
  }
  const turns = async (count) => {
    for (let t = 0; t < count; t += CHUNK) {
      turn()
      await new Promise((r) => setImmediate(r))
    }
  }
  await turns(Math.max(3 * k, 200_000))
  await turns(Number(n))
  if (sink < 0) console.log(sink)
  process.exit(0)
}

if (spawnSync('valgrind', ['--version']).status !== 0) {
  console.log('Skipped: valgrind is not installed (apt-get install valgrind).')
  process.exit(0)
}
ensureBuilt(['core'])
const here = resolve(self, '../../../packages/core/dist')
const cores = [
  ['A', resolve(process.env.CORE_A ?? here)],
  ...(process.env.CORE_B ? [['B', resolve(process.env.CORE_B)]] : []),
]
const keep = process.env.KEEP
const work = keep ?? mkdtempSync(join(tmpdir(), 'floodgate-check-callgrind-'))
if (keep) mkdirSync(keep, { recursive: true })
else process.on('exit', () => rmSync(work, { recursive: true, force: true }))
const profile = process.env.PROFILE === '1'

// Runs at once (BENCH_JOBS, default 2): counts do not depend on what else runs.
const JOBS = Number(process.env.BENCH_JOBS ?? 2)
let running = 0
const queue = []
async function slot(fn) {
  if (running >= JOBS) await new Promise((r) => queue.push(r))
  running++
  try {
    return await fn()
  } finally {
    running--
    queue.shift()?.()
  }
}

/** [instructions, est. cycles] of one run. */
async function count(which, core, tag, keys, n) {
  const out = join(work, `${which}-${tag}-${keys}-${n}.out`)
  await slot(() =>
    promisify(execFile)('valgrind', [
      '--tool=callgrind',
      '--cache-sim=yes',
      ...(profile ? ['--dump-instr=yes'] : []),
      `--callgrind-out-file=${out}`,
      process.execPath,
      ...(profile ? ['--perf-basic-prof'] : []),
      '--single-threaded',
      '--single-threaded-gc',
      self,
      'run',
      which,
      core,
      String(keys),
      String(n),
    ]),
  )
  const text = readFileSync(out, 'utf8')
  const events = /^events: (.*)$/m.exec(text)[1].split(' ')
  const totals = /^(?:summary|totals): (.*)$/m.exec(text)[1].split(' ').map(Number)
  const ev = (name) => totals[events.indexOf(name)] ?? 0
  const l1 = ev('I1mr') + ev('D1mr') + ev('D1mw')
  const ll = ev('ILmr') + ev('DLmr') + ev('DLmw')
  return [ev('Ir'), ev('Ir') + 10 * l1 + 100 * ll]
}

async function perDecision(which, core, tag, keys) {
  const [a, b] = await Promise.all([
    count(which, core, tag, keys, N1),
    count(which, core, tag, keys, N2),
  ])
  return a.map((x, i) => (b[i] - x) / (N2 - N1))
}

console.log(
  `# Per decision (Node ${process.version}, callgrind --cache-sim=yes, N = ${N1} and ${N2})\n`,
)
console.log('| contender | keys | instructions | est. cycles |')
console.log('| --- | ---: | ---: | ---: |')
const rows = []
for (const keys of KEY_COUNTS) {
  rows.push(['plain token bucket over a Map (reference)', 'plain', here, '-', keys])
  for (const [tag, core] of cores) rows.push([`check() ${tag}`, 'check', core, tag, keys])
}
const counted = await Promise.all(rows.map(([, ...r]) => perDecision(...r)))
rows.forEach(([name, , , , keys], i) => {
  const [ir, cycles] = counted[i]
  console.log(`| ${name} | ${keys} | ${ir.toFixed(0)} | ${cycles.toFixed(0)} |`)
})
for (const [tag, core] of cores) console.log(`\ncheck() ${tag}: ${core}`)
