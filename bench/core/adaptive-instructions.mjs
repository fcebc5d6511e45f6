// The adaptive rule's added cost per request beside a token-bucket rule, in CPU instructions
// counted by valgrind's callgrind: a count does not depend on what else the machine runs, where
// timings on a shared 2-core machine move by 30% and more (bench/core/adaptive.mjs times it).
//
//   node bench/core/adaptive-instructions.mjs     # needs valgrind; BENCH_OPS=20000,60000
//
// Each contender runs in a fresh `node` under callgrind twice, for N1 and N2 requests (the same
// loop as bench/core/adaptive.mjs: check(), and release() for the adaptive rule, on a clock the
// loop moves). Start-up, module loading and JIT warm-up are the same in both runs, so
// (count(N2) - count(N1)) / (N2 - N1) is the steady-state count per request. The loop alone (no
// limiter) is subtracted to give each rule's added count.
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ensureBuilt } from '../ensure-built.mjs'

const [N1, N2] = (process.env.BENCH_OPS ?? '20000,60000').split(',').map(Number)
const self = fileURLToPath(import.meta.url)

if (process.argv[2] === 'run') {
  // The counted child: one contender, `n` requests.
  const [, , , which, n] = process.argv
  const { createLimiter } = await import('@floodgate/core')
  const rules = {
    bare: undefined,
    'token-bucket': [{ id: 'tb', key: 'ip', limit: 1e9, window: 1e9 }],
    adaptive: [
      {
        id: 'shed',
        algorithm: 'adaptive',
        key: 'ip',
        adaptive: { target: '250ms', window: '10s', initialLimit: 100, maxLimit: 1000 },
      },
    ],
  }[which]
  let now = 1_000_000
  const limiter = rules && createLimiter({ clock: () => now, rules })
  const facts = Array.from({ length: 1000 }, (_, i) => ({
    method: 'GET',
    path: '/api/items',
    ip: `10.0.${i >> 8}.${i & 255}`,
    headers: {},
  }))
  const release = which === 'adaptive'
  let sink = 0
  for (let i = 0; i < Number(n); i++) {
    now += 1
    if (!limiter) {
      sink += facts[i % 1000].ip.length
      now += 3
      continue
    }
    const d = limiter.check(facts[i % 1000])
    now += 3
    if (release) limiter.release(d)
    sink += d.remaining
  }
  if (sink < 0) console.log(sink)
  process.exit(0)
}

const hasValgrind = spawnSync('valgrind', ['--version']).status === 0
if (!hasValgrind) {
  console.log('Skipped: valgrind is not installed (apt-get install valgrind).')
  process.exit(0)
}
ensureBuilt(['core'])
const work = mkdtempSync(join(tmpdir(), 'floodgate-adaptive-callgrind-'))
process.on('exit', () => rmSync(work, { recursive: true, force: true }))

function count(which, n) {
  const out = join(work, `${which}-${n}.out`)
  execFileSync(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${out}`,
      process.execPath,
      '--single-threaded',
      '--single-threaded-gc',
      '--max-semi-space-size=16',
      self,
      'run',
      which,
      String(n),
    ],
    { stdio: 'ignore' },
  )
  const totals = /^(?:summary|totals): (\d+)/m.exec(readFileSync(out, 'utf8'))
  return Number(totals[1])
}

const perOp = {}
for (const which of ['bare', 'token-bucket', 'adaptive']) {
  perOp[which] = (count(which, N2) - count(which, N1)) / (N2 - N1)
}
const added = (w) => perOp[w] - perOp.bare
console.log(
  `# Instructions per request (Node ${process.version}, callgrind, N = ${N1} and ${N2})\n`,
)
console.log('| contender | instructions per request | added |')
console.log('| --- | ---: | ---: |')
console.log(`| loop alone (no limiter) | ${perOp.bare.toFixed(0)} | 0 |`)
console.log(
  `| token-bucket rule: check() | ${perOp['token-bucket'].toFixed(0)} | ${added('token-bucket').toFixed(0)} |`,
)
console.log(
  `| adaptive rule: check() + release() | ${perOp.adaptive.toFixed(0)} | ${added('adaptive').toFixed(0)} |`,
)
console.log(
  `\nAdaptive added / token-bucket added: ${(added('adaptive') / added('token-bucket')).toFixed(2)}x`,
)
