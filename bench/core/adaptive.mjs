// What an adaptive rule adds per request on the allow path, beside a token-bucket rule, in one
// run: interleaved rounds, medians of the per-round ratio.
//
//   node bench/core/adaptive.mjs          # BENCH_ROUNDS=15 BENCH_ROUND_MS=300
//
// Each op is one request as an adapter runs it: check(facts) and, for a rule that holds a slot
// (adaptive), release(decision) when the response ends. The clock is a counter the loop moves
// (1 ms before each request, 3 ms of "latency" before its release), so every release records a
// real latency in the DDSketch and the windows close as they would under load (one per 10 s,
// here every 2,500 requests). The added cost of a rule is its op's time less the same loop with
// no limiter call; the ratio is adaptive's added cost over the token bucket's.
import { ensureBuilt } from '../ensure-built.mjs'
import { median } from '../stats.mjs'

ensureBuilt(['core'])
const { createLimiter } = await import('@floodgate/core')

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15)
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 300)
const KEYS = 1000
const HUGE = 1_000_000_000

const facts = Array.from({ length: KEYS }, (_, i) => ({
  method: 'GET',
  path: '/api/items',
  ip: `10.0.${i >> 8}.${i & 255}`,
  headers: {},
}))

function contender(name, rules, release) {
  let now = 1_000_000
  const limiter = rules && createLimiter({ clock: () => now, rules })
  let sink = 0
  const op = !limiter
    ? (i) => {
        now += 1
        sink += facts[i].ip.length
        now += 3
      }
    : release
      ? (i) => {
          now += 1
          const d = limiter.check(facts[i])
          now += 3
          limiter.release(d)
          sink += d.remaining
        }
      : (i) => {
          now += 1
          const d = limiter.check(facts[i])
          now += 3
          sink += d.remaining
        }
  return { name, op, sink: () => sink, limiter }
}

const contenders = [
  contender('loop alone (no limiter)', undefined, false),
  contender(
    'token-bucket rule: check()',
    [{ id: 'tb', key: 'ip', limit: HUGE, window: HUGE }],
    false,
  ),
  contender(
    'adaptive rule: check() + release()',
    [
      {
        id: 'shed',
        algorithm: 'adaptive',
        key: 'ip',
        adaptive: { target: '250ms', window: '10s', initialLimit: 100, maxLimit: 1000 },
      },
    ],
    true,
  ),
]

function measure(op) {
  let ops = 0
  let i = 0
  const start = performance.now()
  const deadline = start + ROUND_MS
  while (performance.now() < deadline) {
    for (let j = 0; j < 2000; j++) op(i++ % KEYS)
    ops += 2000
  }
  return ((performance.now() - start) * 1e6) / ops
}

const ns = new Map(contenders.map((c) => [c.name, []]))
for (const c of contenders) measure(c.op)
for (let r = 0; r < ROUNDS; r++) for (const c of contenders) ns.get(c.name).push(measure(c.op))

const [bare, tb, adaptive] = contenders.map((c) => ns.get(c.name))
const added = (xs) => xs.map((x, r) => x - bare[r])
const ratios = added(adaptive).map((a, r) => a / added(tb)[r])
console.log(
  `# Adaptive rule overhead on the allow path (Node ${process.version}, ${ROUNDS} rounds of ${ROUND_MS} ms, median)\n`,
)
console.log('| contender | ns per request | added ns |')
console.log('| --- | ---: | ---: |')
for (const c of contenders) {
  const xs = ns.get(c.name)
  console.log(`| ${c.name} | ${median(xs).toFixed(0)} | ${median(added(xs)).toFixed(0)} |`)
}
console.log(
  `\nAdaptive added cost / token-bucket added cost: ${median(ratios).toFixed(2)}x (rounds ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`,
)
const state = contenders[2].limiter.adaptive('shed')
console.log(`(adaptive rule at the end: limit ${state.limit}, ${state.windows} windows closed)`)
if (contenders.some((c) => Number.isNaN(c.sink()))) console.log('')
