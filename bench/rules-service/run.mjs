// Rules service: how many host polls one service process answers, the hosts' copy current
// (If-None-Match of the current ETag, so each answer is a 304 with no body).
//
//   node bench/rules-service/run.mjs      (after `pnpm build`; `pnpm bench` does both)
//
// Storages: PGlite (with its in-memory revision cache), PGlite with the cache bypassed (what
// every poll cost before), and the PostgreSQL at DATABASE_URL (every poll asks the database,
// since other instances may write it). Each service runs in its own child process; autocannon
// runs here. Rounds are interleaved, medians reported: polls per second, p99 latency, and the
// service's CPU time per poll (the figure that moves least on a shared machine).
// Env: BENCH_ROUNDS (3), BENCH_SECONDS (5), BENCH_CONNECTIONS (20), BENCH_STORAGES (all).
import { fork } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import pg from 'pg'
import { ensureBuilt } from '../ensure-built.mjs'
import { median } from '../stats.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20)
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

ensureBuilt(['core', 'rules-service'])

async function postgresUp() {
  const client = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 2000 })
  try {
    await client.connect()
    await client.end()
    return true
  } catch {
    return false
  }
}

const STORAGES = (process.env.BENCH_STORAGES ?? 'pglite,pglite-uncached,postgres').split(',')
const storages = []
for (const s of STORAGES) {
  if (s === 'postgres' && !(await postgresUp())) {
    console.log(`PostgreSQL at ${DATABASE_URL} is not reachable: its row is skipped.`)
    continue
  }
  storages.push(s)
}

const children = new Set()
process.on('exit', () => {
  for (const c of children) c.kill()
})

function start(storage) {
  const child = fork(join(here, 'server.mjs'), [storage], {
    cwd: here,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  children.add(child)
  child.once('exit', () => children.delete(child))
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve({ child, port: m.port, storage }))
    child.once('exit', (code) => reject(new Error(`${storage} exited with ${code}`)))
  })
}

const cpu = (server) =>
  new Promise((resolve) => {
    server.child.once('message', (m) => resolve(m.cpuUs))
    server.child.send('cpu')
  })

async function measure(server) {
  const before = await cpu(server)
  const r = await autocannon({
    url: `http://127.0.0.1:${server.port}/v1/services/checkout/ruleset`,
    headers: { 'if-none-match': '"1"' },
    connections: CONNECTIONS,
    duration: SECONDS,
  })
  const used = (await cpu(server)) - before
  const polls = r.requests.total
  if (r.non2xx !== polls || r['3xx'] !== polls) {
    throw new Error(
      `${server.storage}: expected only 304s, got ${JSON.stringify(r.statusCodeStats)}`,
    )
  }
  return { rps: polls / SECONDS, p99: r.latency.p99, cpuUsPerPoll: used / polls }
}

const servers = []
for (const s of storages) servers.push(await start(s))
// A short warm-up each, so the JIT and the pool are settled before the rounds.
for (const server of servers) {
  await autocannon({
    url: `http://127.0.0.1:${server.port}/v1/services/checkout/ruleset`,
    headers: { 'if-none-match': '"1"' },
    connections: CONNECTIONS,
    duration: 1,
  })
}
const results = new Map(storages.map((s) => [s, []]))
for (let round = 0; round < ROUNDS; round++) {
  const order = servers.map((_, i) => servers[(i + round) % servers.length])
  for (const server of order) results.get(server.storage).push(await measure(server))
}
for (const server of servers) server.child.send('stop')

const NAMES = {
  pglite: 'PGlite, revision cache',
  'pglite-uncached': 'PGlite, a query per poll (before)',
  postgres: 'PostgreSQL, a query per poll',
}
const { loadavg } = await import('node:os')
console.log(
  `${ROUNDS} rounds of ${SECONDS} s, ${CONNECTIONS} connections, every answer a 304; medians. Load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}.\n`,
)
console.log('| storage | polls/s | p99 (ms) | service CPU per poll (µs) |')
console.log('| --- | ---: | ---: | ---: |')
for (const s of storages) {
  const rows = results.get(s)
  console.log(
    `| ${NAMES[s]} | ${Math.round(median(rows.map((r) => r.rps)))} | ${median(rows.map((r) => r.p99))} | ${Math.round(median(rows.map((r) => r.cpuUsPerPoll)))} |`,
  )
}
