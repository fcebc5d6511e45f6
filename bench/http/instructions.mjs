// HTTP benchmark, deterministic flavour: main-thread CPU instructions per response, counted by
// valgrind's callgrind, for the servers of bench/http/server.mjs.
//
//   node bench/http/instructions.mjs    (after `pnpm build`; needs valgrind: apt-get install valgrind)
//
// Timed CPU per response (bench/http/run.mjs) moves a lot between runs on a shared 2-core
// machine; an instruction count does not depend on what else the machine is doing. Each variant
// is a fresh server process under callgrind with instrumentation off. It is warmed up, then
// instrumentation is switched on for exactly BENCH_REQUESTS requests and off again, and the main
// thread's count is divided by the requests.
// - Only the main thread counts. V8's background threads (concurrent compilation above all) add
//   work that depends on when they ran, not on the request path. Node runs with
//   --single-threaded-gc so that garbage collection, which requests do cause, lands on the main
//   thread and is counted.
// - The young generation is pinned at V8's maximum (16 MB semi-spaces), where a busy server's
//   ends up. V8 sizes it from allocation per millisecond, and valgrind slows everything down
//   many times over: left alone, processes of the same variant run very different numbers of
//   scavenges in the counted window.
// - The warm-up is split over several autocannon runs, each on new connections: closing
//   connections deoptimises per-request code (new maps) the first few times, and the re-optimised
//   code must be in place before counting; one long warm-up leaves the count higher and less
//   stable.
// Env: BENCH_FRAMEWORKS (express,fastify,koa), BENCH_REQUESTS (4000), BENCH_WARMUP (8000, in 4
// runs), BENCH_REPEATS (1; with more, fresh processes each, and the table gives the median, min
// and max), BENCH_JOBS (2 servers under valgrind at once; it changes the wall time, not the
// counts), BENCH_VARIANTS (all; e.g. `floodgate,peer:reject`; bare always runs; the SyncedStore and
// RedisStore rows, Fastify only, need the Redis at REDIS_URL), BENCH_TIMEOUT (60 s per request),
// BENCH_CONNECTIONS (10, warm-up and counted window alike; more connections make larger
// RedisStore batches: the RedisStore row also prints responses per script call, from the
// REDIS_URL's INFO commandstats, exact on a Redis nothing else runs scripts on), BENCH_NODE_FLAGS
// (replaces the node flags above, for experiments), BENCH_PROFILE (a number N: also list, per
// variant, the N functions whose own instructions per response differ most from the
// two-constant-headers floor's, JIT code named through node --perf-basic-prof; the counts move
// by a few hundred per function between processes, so read the large differences), KEEP (1: keep the callgrind files and perf maps, for `node bench/callgrind-functions.mjs`).
import { execFileSync, fork, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { Redis } from 'ioredis'
import { variantName, variantsFor } from './variants.mjs'
import { selfCosts } from '../callgrind-functions.mjs'
import { ensureBuilt } from '../ensure-built.mjs'
import { median } from '../stats.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..', '..')
const FRAMEWORKS = (process.env.BENCH_FRAMEWORKS ?? 'express,fastify,koa').split(',')
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4000)
const WARMUP = Number(process.env.BENCH_WARMUP ?? 8000)
const REPEATS = Number(process.env.BENCH_REPEATS ?? 1)
const JOBS = Number(process.env.BENCH_JOBS ?? 2)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10)
const WARMUP_RUNS = 4
// Seconds autocannon waits for a response. A server under callgrind on a busy machine can be
// slower than autocannon's default of 10; a timeout fails the run, a longer wait changes no count.
const TIMEOUT_S = Number(process.env.BENCH_TIMEOUT ?? 60)
const NODE_FLAGS = (
  process.env.BENCH_NODE_FLAGS ??
  '--single-threaded-gc --min-semi-space-size=16 --max-semi-space-size=16'
)
  .split(' ')
  .filter(Boolean)
const PROFILE = Number(process.env.BENCH_PROFILE ?? 0)
if (PROFILE > 0) NODE_FLAGS.push('--perf-basic-prof')
const ONLY = process.env.BENCH_VARIANTS?.split(',')
const picked = ([v, m], i) => i === 0 || !ONLY || ONLY.includes(v) || ONLY.includes(`${v}:${m}`)
const variantsOf = (framework) => variantsFor(framework).filter(picked)

const version = (cmd, args) => {
  const r = spawnSync(cmd, args, { encoding: 'utf8' })
  return r.status === 0 ? r.stdout.trim() : undefined
}
const valgrind = version('valgrind', ['--version'])
if (!valgrind || version('callgrind_control', ['--version']) === undefined) {
  console.error(
    'bench/http/instructions.mjs needs valgrind (valgrind and callgrind_control on PATH): apt-get install valgrind',
  )
  process.exit(1)
}

ensureBuilt(['core', 'express', 'fastify', 'koa', 'redis'])

// The commit, and whether the packages' sources differ from it: dist may have been rebuilt from
// uncommitted changes.
const git = (...args) => version('git', ['-C', root, ...args])
const commit = git('rev-parse', '--short', 'HEAD') ?? 'unknown commit'
const dirty = git('status', '--porcelain', '--', 'packages')
  ? ' + uncommitted changes in packages/'
  : ''

const dir = mkdtempSync(join(tmpdir(), 'floodgate-callgrind-'))
const KEEP = Boolean(process.env.KEEP)
if (KEEP) console.error(`callgrind files kept in ${dir}`)
const children = new Set()
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL')
  if (!KEEP) rmSync(dir, { recursive: true, force: true })
})
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130))

// One server under callgrind, forked so server.mjs reports its port over IPC as it does for
// run.mjs: valgrind passes the IPC descriptor through to node.
function start(name, framework, variant, mode) {
  const out = join(dir, name)
  const child = fork(join(here, 'server.mjs'), [framework, variant, mode], {
    cwd: here,
    // A RedisStore call under valgrind can take longer than the default 50 ms deadline: the
    // request would then fail open down another path, and that path would be counted.
    env: { BENCH_CALL_TIMEOUT_MS: '60000', ...process.env },
    execPath: 'valgrind',
    execArgv: [
      '--tool=callgrind',
      '--instr-atstart=no',
      // V8 writes and rewrites machine code in anonymous memory.
      '--smc-check=all-non-file',
      '--separate-threads=yes',
      ...(PROFILE > 0 ? ['--dump-instr=yes'] : []),
      `--callgrind-out-file=${out}`,
      `--log-file=${out}.log`,
      process.execPath,
      ...NODE_FLAGS,
    ],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  children.add(child)
  const exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal)),
  )
  void exited.then(() => children.delete(child))
  const ready = new Promise((resolve, reject) => {
    child.once('message', (m) => resolve(m.port))
    void exited.then((code) => reject(new Error(`${name} exited with ${code}: ${log(out)}`)))
  })
  return { child, out, exited, ready }
}

const log = (out) => (existsSync(`${out}.log`) ? readFileSync(`${out}.log`, 'utf8') : '')

async function load(name, port, amount, expected) {
  const r = await autocannon({
    url: `http://127.0.0.1:${port}/`,
    connections: CONNECTIONS,
    amount,
    timeout: TIMEOUT_S,
  })
  const codes = Object.fromEntries(
    Object.entries(r.statusCodeStats).map(([code, { count }]) => [code, count]),
  )
  const ok = expected === 'any' ? r['2xx'] + r.non2xx : (codes[expected] ?? 0)
  if (ok !== amount || r.errors > 0 || r.timeouts > 0) {
    throw new Error(
      `${name}: expected ${amount} responses with status ${expected}, got ${JSON.stringify(codes)}, ${r.errors} errors, ${r.timeouts} timeouts`,
    )
  }
}

/**
 * EVAL and EVALSHA calls Redis has run so far (`INFO commandstats`): RedisStore's script calls,
 * exact only on a Redis that nothing else sends scripts to while a row is counted.
 */
async function scriptCalls() {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
    maxRetriesPerRequest: 1,
  })
  try {
    const info = await redis.info('commandstats')
    let calls = 0
    for (const m of info.matchAll(/^cmdstat_(eval|evalsha):calls=(\d+)/gm)) calls += Number(m[2])
    return calls
  } finally {
    redis.disconnect()
  }
}

const callgrind = (pid, ...args) =>
  execFileSync('callgrind_control', [...args, String(pid)], { stdio: ['ignore', 'pipe', 'pipe'] })

async function measure(framework, variant, mode, repeat) {
  const name = `${framework}-${variant}-${mode}-${repeat}`
  const server = start(name, framework, variant, mode)
  const port = await server.ready
  // Warm-up, uncounted: in reject mode its first request uses up the one client's quota.
  for (let i = 0; i < WARMUP_RUNS; i++) {
    await load(name, port, Math.ceil(WARMUP / WARMUP_RUNS), mode === 'reject' ? 'any' : '200')
  }
  const calls = variant === 'redis' ? await scriptCalls() : undefined
  callgrind(server.child.pid, '--instr=on')
  const counting = Date.now()
  await load(name, port, REQUESTS, mode === 'reject' ? '429' : '200')
  // Under valgrind a server answers a few hundred requests a second: work done per interval
  // (a SyncedStore's rounds) weighs on each response far more than at full speed.
  const perSecond = REQUESTS / ((Date.now() - counting) / 1000)
  callgrind(server.child.pid, '--instr=off')
  // Responses per script call: what each batch's cost is shared by.
  const batch = calls === undefined ? undefined : REQUESTS / ((await scriptCalls()) - calls)
  server.child.send('exit')
  const code = await server.exited
  if (code !== 0) throw new Error(`${name} exited with ${code}: ${log(server.out)}`)
  // Callgrind writes one file per thread at exit (<out>-01 is the main thread), holding only what
  // ran while instrumentation was on.
  const counts = readdirSync(dir)
    .filter((f) => f.startsWith(`${basename(server.out)}-`))
    .map((f) => [
      f.slice(-2),
      Number(/^totals: (\d+)/m.exec(readFileSync(join(dir, f), 'utf8'))?.[1]),
    ])
  const main = counts.find(([thread]) => thread === '01')?.[1]
  if (!(main > 0)) throw new Error(`${name}: no instruction count for the main thread`)
  const others = counts.reduce((sum, [thread, n]) => (thread === '01' ? sum : sum + (n || 0)), 0)
  const functions = PROFILE > 0 ? selfCosts(`${server.out}-01`) : undefined
  // node --perf-basic-prof writes its map here; valgrind runs node in the forked process itself.
  if (PROFILE > 0 && !KEEP) rmSync(`/tmp/perf-${server.child.pid}.map`, { force: true })
  return {
    perResponse: main / REQUESTS,
    othersPerResponse: others / REQUESTS,
    perSecond,
    batch,
    functions,
  }
}

const k = (x) => (x / 1000).toFixed(1)
const started = Date.now()
const jobs = []
for (const framework of FRAMEWORKS) {
  for (const [variant, mode] of variantsOf(framework)) {
    for (let repeat = 0; repeat < REPEATS; repeat++) jobs.push({ framework, variant, mode, repeat })
  }
}
// Variants one after the other, JOBS at a time, each in a fresh process.
let next = 0
async function worker() {
  while (next < jobs.length) {
    const job = jobs[next++]
    const t = Date.now()
    Object.assign(job, await measure(job.framework, job.variant, job.mode, job.repeat))
    console.error(
      `${job.framework} ${job.variant} ${job.mode} #${job.repeat + 1}: ${k(job.perResponse)}k instructions per response on the main thread (other threads ${k(job.othersPerResponse)}k; ${Math.round(job.perSecond)} responses/s counted${job.batch === undefined ? '' : `; ${job.batch.toFixed(2)} responses per script call`}; ${Math.round((Date.now() - t) / 1000)} s)`,
    )
  }
}
try {
  await Promise.all(Array.from({ length: Math.max(1, JOBS) }, worker))
} catch (err) {
  console.error(err instanceof Error ? err.message : err)
  process.exit(1)
}

console.log(
  `Main-thread instructions per response (callgrind), ${REQUESTS} requests after ${WARMUP} of warm-up, ${CONNECTIONS} connections${REPEATS > 1 ? `, ${REPEATS} fresh processes per variant` : ''}.`,
)
console.log(`Node ${process.version}, ${valgrind}, commit ${commit}${dirty}.`)
for (const framework of FRAMEWORKS) {
  const rows = variantsOf(framework).map(([variant, mode]) => {
    const xs = jobs
      .filter((j) => j.framework === framework && j.variant === variant && j.mode === mode)
      .map((j) => j.perResponse)
    return { variant, mode, median: median(xs), min: Math.min(...xs), max: Math.max(...xs) }
  })
  const bare = rows[0]
  console.log(`\n### ${framework}\n`)
  if (REPEATS > 1) {
    console.log('| variant | path | k instructions/response (median) | min | max | vs bare |')
    console.log('| --- | --- | ---: | ---: | ---: | ---: |')
  } else {
    console.log('| variant | path | k instructions/response | vs bare |')
    console.log('| --- | --- | ---: | ---: |')
  }
  for (const r of rows) {
    const name = variantName(framework, r.variant)
    const path = r.mode === 'pass' ? 'allow' : 'reject'
    const range = REPEATS > 1 ? ` | ${k(r.min)} | ${k(r.max)}` : ''
    console.log(
      `| ${name} | ${path} | ${k(r.median)}${range} | ${(r.median / bare.median).toFixed(3)}x |`,
    )
  }
}
if (PROFILE > 0) {
  // Per function, this variant's own instructions per response less the floor's (first process
  // of each): where a limiter's cost goes, beyond what sending two headers costs anyway.
  const first = (framework, variant, mode) =>
    jobs.find((j) => j.framework === framework && j.variant === variant && j.mode === mode)
  for (const framework of FRAMEWORKS) {
    const floor = first(framework, 'headers', 'pass')
    if (!floor) {
      console.log(`\n(${framework}: no profile without the two-constant-headers variant)`)
      continue
    }
    for (const [variant, mode] of variantsOf(framework)) {
      if (variant === 'headers' || variant === 'bare') continue
      const job = first(framework, variant, mode)
      const names = new Set([...job.functions.keys(), ...floor.functions.keys()])
      const rows = [...names]
        .map((n) => [((job.functions.get(n) ?? 0) - (floor.functions.get(n) ?? 0)) / REQUESTS, n])
        .sort((a, b) => Math.abs(b[0]) - Math.abs(a[0]))
        .slice(0, PROFILE)
      console.log(
        `\n#### ${framework}: ${variantName(framework, variant)} ${mode === 'pass' ? 'allow' : 'reject'} less the floor\n`,
      )
      console.log('| instructions per response | function |')
      console.log('| ---: | --- |')
      for (const [d, n] of rows)
        console.log(`| ${d.toFixed(0)} | \`${n.replaceAll(root, '').slice(0, 120)}\` |`)
    }
  }
}
console.log(`\n(${Math.round((Date.now() - started) / 1000)} s in all)`)
process.exit(0)
