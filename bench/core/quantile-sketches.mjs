// The streaming-quantile libraries weighed for adaptive rules, in one run: the time to record one
// latency, the p99 error against the exact value, and the bytes each adds to node_modules.
// Installed from npm into a throwaway project (none of them is a dependency of the bench).
//
//   node bench/core/quantile-sketches.mjs      # SKETCH_VALUES=200000 SKETCH_RUNS=5
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const VALUES = Number(process.env.SKETCH_VALUES ?? 200_000)
const RUNS = Number(process.env.SKETCH_RUNS ?? 5)
const PACKAGES = ['@datadog/sketches-js@2.1.1', 'hdr-histogram-js@3.0.1', 'tdigest@0.1.3']

const work = mkdtempSync(join(tmpdir(), 'floodgate-sketches-'))
process.on('exit', () => rmSync(work, { recursive: true, force: true }))

function bytes(dir) {
  let total = 0
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    const s = statSync(p)
    total += s.isDirectory() ? bytes(p) : s.size
  }
  return total
}

/** Install one package alone; its node_modules size (with its dependencies) and a require. */
function install(spec) {
  const dir = join(work, spec.replace(/[@/]/g, '_'))
  execFileSync('mkdir', ['-p', dir])
  writeFileSync(join(dir, 'package.json'), '{"private":true}')
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--silent', spec], {
    cwd: dir,
    stdio: 'ignore',
  })
  return { size: bytes(join(dir, 'node_modules')), require: createRequire(join(dir, 'x.js')) }
}

// Latencies with a long tail, as a service's are: 20 ms and up, cubed uniform noise.
let seed = 42
const random = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32
const values = Array.from({ length: VALUES }, () => 20 + random() ** 3 * 500)
const exact = [...values].sort((a, b) => a - b)[Math.floor(0.99 * VALUES)]

const contenders = [
  {
    spec: PACKAGES[0],
    make: (r) => new (r('@datadog/sketches-js').DDSketch)({ relativeAccuracy: 0.01 }),
    add: (s, v) => s.accept(v),
    p99: (s) => s.getValueAtQuantile(0.99),
  },
  {
    spec: PACKAGES[1],
    make: (r) =>
      r('hdr-histogram-js').build({
        lowestDiscernibleValue: 1,
        highestTrackableValue: 3_600_000,
        numberOfSignificantValueDigits: 2,
        useWebAssembly: false,
      }),
    add: (s, v) => s.recordValue(Math.round(v)),
    p99: (s) => s.getValueAtPercentile(99),
  },
  {
    spec: PACKAGES[2],
    make: (r) => new (r('tdigest').TDigest)(),
    add: (s, v) => s.push(v),
    p99: (s) => s.percentile(0.99),
  },
]

console.log(`# Streaming quantiles (Node ${process.version}, ${VALUES} values, best of ${RUNS})\n`)
console.log('| package | ns per value | p99 error | node_modules bytes |')
console.log('| --- | ---: | ---: | ---: |')
for (const c of contenders) {
  const { size, require } = install(c.spec)
  let best = Infinity
  let estimate = 0
  for (let r = 0; r < RUNS; r++) {
    const s = c.make(require)
    const t = process.hrtime.bigint()
    for (const v of values) c.add(s, v)
    best = Math.min(best, Number(process.hrtime.bigint() - t) / VALUES)
    estimate = c.p99(s)
  }
  const error = ((estimate - exact) / exact) * 100
  console.log(
    `| ${c.spec} | ${best.toFixed(0)} | ${error.toFixed(2)}% | ${size.toLocaleString('en')} |`,
  )
}
