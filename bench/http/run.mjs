// HTTP benchmark: bare vs Floodgate vs the peer middleware, per framework, over loopback.
//
//   node bench/http/run.mjs            (after `pnpm build`; `pnpm bench` does both)
//
// Each server runs in its own child process; autocannon runs here. Rounds are interleaved
// (every variant once per round, order rotating) and medians are reported. Each round runs two
// loads per server: as fast as it goes (req/s, p99), and a fixed arrival rate (40% of bare's
// throughput) for server CPU time per response (process.cpuUsage in the server /
// responses). CPU per response is the headline number: on a 2-core machine the load generator
// competes with the server, so throughput is noisy, and at a fixed rate every variant sees the
// same arrival pattern (the same wake-ups, the same batching).
// Env: BENCH_ROUNDS (5), BENCH_SECONDS (2), BENCH_CONNECTIONS (10), BENCH_FRAMEWORKS (all),
// BENCH_VARIANTS (all; e.g. `floodgate,synced,peer:reject`; bare always runs). The SyncedStore and
// RedisStore rows (Fastify) use the Redis at REDIS_URL (default redis://127.0.0.1:6379).
import { fork } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { variantName, variantsFor } from './variants.mjs'
import { ensureBuilt } from '../ensure-built.mjs'
import { median, pairedRatios, ratioRange } from '../stats.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10)
const FRAMEWORKS = (process.env.BENCH_FRAMEWORKS ?? 'express,fastify,koa').split(',')
const ONLY = process.env.BENCH_VARIANTS?.split(',')
const picked = ([v, m], i) => i === 0 || !ONLY || ONLY.includes(v) || ONLY.includes(`${v}:${m}`)

ensureBuilt(['core', 'express', 'fastify', 'koa', 'redis'])

const children = new Set()
// A server that failed to start must not leave its siblings running.
process.on('exit', () => {
  for (const c of children) c.kill()
})

function start(framework, variant, mode) {
  const child = fork(join(here, 'server.mjs'), [framework, variant, mode], {
    cwd: here,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  children.add(child)
  child.once('exit', () => children.delete(child))
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve({ child, port: m.port, framework, variant, mode }))
    child.once('exit', (code) =>
      reject(new Error(`${framework}/${variant}/${mode} exited with ${code}`)),
    )
  })
}

const cpu = (server) =>
  new Promise((resolve) => {
    server.child.once('message', (m) => resolve(m.cpuUs))
    server.child.send('cpu')
  })

async function measure(server, seconds, rate) {
  const before = await cpu(server)
  const result = await autocannon({
    url: `http://127.0.0.1:${server.port}/`,
    connections: CONNECTIONS,
    duration: seconds,
    ...(rate ? { overallRate: rate } : {}),
  })
  const after = await cpu(server)
  const responses = result.requests.total
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    cpuPerResUs: (after - before) / responses,
    non2xx: result.non2xx / Math.max(1, responses),
    errors: result.errors,
  }
}

const lines = []
const out = (s = '') => {
  lines.push(s)
  console.log(s)
}

const started = Date.now()
out(
  `Node ${process.version}, ${CONNECTIONS} connections, ${ROUNDS} interleaved rounds of ${SECONDS} s, medians.`,
)
for (const framework of FRAMEWORKS) {
  const variants = variantsFor(framework).filter(picked)
  const servers = await Promise.all(variants.map(([v, m]) => start(framework, v, m)))
  // Warm-up: JIT, key creation, and (reject mode) exhausting the one client's quota.
  const warm = []
  for (const s of servers) warm.push(await measure(s, 1))
  // The fixed rate: 40% of what bare sustains, so no variant saturates the 2 cores.
  const rate = Math.max(500, Math.round((await measure(servers[0], SECONDS)).rps * 0.4))
  const samples = servers.map(() => [])
  const cpuSamples = servers.map(() => [])
  for (let round = 0; round < ROUNDS; round++) {
    for (let j = 0; j < servers.length; j++) {
      const i = (j + round) % servers.length
      samples[i].push(await measure(servers[i], SECONDS))
      cpuSamples[i].push(await measure(servers[i], SECONDS, rate))
    }
  }
  // Each server closes its store (and deletes its Redis keys) before the next framework runs.
  const exited = servers.map(
    (s) =>
      new Promise((resolve) =>
        s.child.exitCode !== null ? resolve() : s.child.once('exit', resolve),
      ),
  )
  for (const s of servers) s.child.send('exit')
  await Promise.all(exited)
  const stat = samples.map((xs, i) => ({
    rps: median(xs.map((x) => x.rps)),
    p99: median(xs.map((x) => x.p99)),
    cpu: median(cpuSamples[i].map((x) => x.cpuPerResUs)),
    // Each round's ratio to bare in the same round, then the median and the range: drift
    // across rounds (other jobs on the machine) cancels out, and the range shows what is left.
    rpsPaired: pairedRatios(
      xs.map((x) => x.rps),
      samples[0].map((x) => x.rps),
    ),
    paired: pairedRatios(
      cpuSamples[i].map((x) => x.cpuPerResUs),
      cpuSamples[0].map((x) => x.cpuPerResUs),
    ),
    non2xx: median(xs.map((x) => x.non2xx)),
    errors: xs.reduce((a, x) => a + x.errors, 0),
  }))
  const bare = stat[0]
  out()
  out(`### ${framework}`)
  out()
  out(`CPU per response measured at a fixed ${rate} req/s.`)
  out()
  out(
    '| variant | path | req/s | vs bare | vs bare, paired by round (range) | p99 ms | CPU µs/response | CPU vs bare | CPU paired (range) | non-2xx |',
  )
  out('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  variants.forEach(([v, m], i) => {
    const s = stat[i]
    const name = variantName(framework, v)
    out(
      `| ${name} | ${m === 'pass' ? 'allow' : 'reject'} | ${Math.round(s.rps)} | ${(s.rps / bare.rps).toFixed(3)}x | ${ratioRange(s.rpsPaired, 3)} | ${s.p99} | ${s.cpu.toFixed(1)} | ${(s.cpu / bare.cpu).toFixed(3)}x | ${ratioRange(s.paired, 3)} | ${(s.non2xx * 100).toFixed(0)}% |`,
    )
  })
}
out()
out(`(${Math.round((Date.now() - started) / 1000)} s in all)`)
process.exit(0)
