// Redis benchmark: Floodgate's RedisStore beside rate-limiter-flexible (RateLimiterRedis),
// rate-limit-redis and @fastify/rate-limit's Redis store, in one run, on the same Redis.
//
//   node bench/redis/run.mjs          (after `pnpm build`; REDIS_URL, default redis://127.0.0.1:6379)
//
// 1. Decisions per second with 1 and 64 requests in flight (interleaved rounds, medians), the
//    commands each decision sends (counted on the client) and the Redis commands it executes
//    (INFO commandstats, including the ones a Lua script calls). A last row, not a contender,
//    is the floor of a design that keeps Redis's clock and a state per client: one script that
//    reads the clock, reads a key and writes it with a TTL, and decides nothing; and the same
//    floor batched as RedisStore batches (one call for the requests started in one turn, up to
//    16: `TIME` once, `GET` and `SET … PX` per key, one number answered per request).
// 2. Added latency when Redis is down (killed: connection refused; stalled: a proxy that
//    accepts and never answers), decisionTimeoutMs 50.
// 3. HTTP: Fastify bare vs Fastify + Floodgate on RedisStore vs Fastify + @fastify/rate-limit
//    on Redis (servers in child processes, autocannon here).
// Env: BENCH_ROUNDS (3), BENCH_ROUND_MS (1500), BENCH_SECONDS (3), BENCH_CONNECTIONS (64),
//      BENCH_PARTS (decisions,down,http).
import { fork } from 'node:child_process'
import net from 'node:net'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { Redis } from 'ioredis'
import { ensureBuilt } from '../ensure-built.mjs'
import { BATCHED_FLOOR_LUA, FLOOR_BATCH, FLOOR_LUA } from './floor-script.mjs'
import { deleteKeys } from '../redis-keys.mjs'
import { median, pairedRatios, ratioRange } from '../stats.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 1500)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64)
const PARTS = new Set((process.env.BENCH_PARTS ?? 'decisions,down,http').split(','))
const PREFIX = `fgbench${process.pid}`
const KEYS = Array.from({ length: 10_000 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.7`)

ensureBuilt(['core', 'redis', 'fastify'])

const { createLimiter } = await import('@floodgate/core')
const { createRedisStore } = await import('@floodgate/redis')

const lines = []
const out = (s = '') => {
  lines.push(s)
  console.log(s)
}

/** An ioredis client whose sendCommand calls are counted (commands sent per decision). */
function countedClient(options = {}) {
  const client = new Redis(REDIS_URL, options)
  client.sent = 0
  const send = client.sendCommand.bind(client)
  client.sendCommand = (...args) => {
    client.sent++
    return send(...args)
  }
  return client
}

/** Calls of every command Redis ran (scripts' inner ones too), and the scripts' microseconds. */
async function commandCalls(admin) {
  const info = await admin.info('commandstats')
  let calls = 0
  let usec = 0
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    if (m[1] === 'info' || m[1].startsWith('config')) continue
    calls += Number(m[2])
    // Every contender decides with one script, whose time includes the commands it runs.
    if (m[1] === 'eval' || m[1] === 'evalsha') usec += Number(m[3])
  }
  return { calls, usec }
}

async function contenders() {
  const list = []

  {
    const client = countedClient({
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
    })
    await new Promise((r) => client.once('ready', r))
    const store = createRedisStore({ client, prefix: `${PREFIX}:fg`, callTimeoutMs: 1000 })
    const limiter = createLimiter({
      store,
      decisionTimeoutMs: 1000,
      rules: [{ id: 'per-ip', algorithm: 'token-bucket', limit: 1_000_000_000, window: '1h' }],
    })
    const facts = (ip) => ({ method: 'GET', path: '/', ip, headers: {} })
    // Store level, like the peers' rows: one rule, the entry the limiter would build. The
    // peers all count in fixed windows; the fixed-window row runs the same algorithm.
    for (const algorithm of ['token-bucket', 'fixed-window']) {
      const [rule] = limiter.compileRules([
        { id: `per-ip-${algorithm}`, algorithm, limit: 1_000_000_000, window: '1h' },
      ]).rules
      list.push({
        name: `Floodgate RedisStore.consume (${algorithm.replace('-', ' ')})`,
        client,
        op: (k) => store.consume([{ rule, key: k, cost: 1, maxWaitMs: 0, shadow: false }], 0),
      })
    }
    list.push({
      name: 'Floodgate limiter.check on RedisStore (whole decision)',
      client,
      op: (k) => limiter.check(facts(k)),
    })
    const limiter2 = createLimiter({
      store,
      decisionTimeoutMs: 1000,
      rules: [
        { id: 'burst', algorithm: 'token-bucket', limit: 1_000_000_000, window: '1h' },
        { id: 'hour', algorithm: 'fixed-window', limit: 1_000_000_000, window: '1h' },
      ],
    })
    list.push({
      name: 'Floodgate RedisStore, 2 rules per request',
      client,
      op: (k) => limiter2.check(facts(k)),
    })
  }
  {
    // A client the application passes in as it is: `new Redis(url)`, ioredis's defaults.
    const client = countedClient()
    await new Promise((r) => client.once('ready', r))
    const store = createRedisStore({ client, prefix: `${PREFIX}:fgp`, callTimeoutMs: 1000 })
    const limiter = createLimiter({
      store,
      decisionTimeoutMs: 1000,
      rules: [{ id: 'per-ip', algorithm: 'token-bucket', limit: 1_000_000_000, window: '1h' }],
    })
    list.push({
      name: 'Floodgate limiter.check on RedisStore, plain `new Redis(url)` passed in',
      client,
      op: (k) => limiter.check({ method: 'GET', path: '/', ip: k, headers: {} }),
    })
  }
  {
    const { RateLimiterRedis } = await import('rate-limiter-flexible')
    const client = countedClient({ enableOfflineQueue: false })
    await new Promise((r) => client.once('ready', r))
    const rl = new RateLimiterRedis({
      storeClient: client,
      keyPrefix: `${PREFIX}:rlf`,
      points: 1_000_000_000,
      duration: 3600,
    })
    list.push({
      name: 'rate-limiter-flexible RateLimiterRedis',
      peer: true,
      client,
      op: (k) => rl.consume(k),
    })
  }
  {
    const { RedisStore } = await import('rate-limit-redis')
    const client = countedClient()
    await new Promise((r) => client.once('ready', r))
    const store = new RedisStore({
      sendCommand: (...args) => client.call(...args),
      prefix: `${PREFIX}:rlr:`,
    })
    store.init({ windowMs: 3_600_000 })
    list.push({
      name: 'rate-limit-redis (express-rate-limit)',
      peer: true,
      client,
      op: (k) => store.increment(k),
    })
  }
  {
    const { default: FastifyRedisStore } = await import('@fastify/rate-limit/store/RedisStore.js')
    const client = countedClient()
    await new Promise((r) => client.once('ready', r))
    const store = new FastifyRedisStore(false, false, client, `${PREFIX}:frl:`)
    const incr = (k) =>
      new Promise((resolve, reject) =>
        store.incr(k, (err, res) => (err ? reject(err) : resolve(res)), 3_600_000, 1_000_000_000),
      )
    list.push({ name: '@fastify/rate-limit RedisStore', peer: true, client, op: incr })
  }
  {
    // Not a contender: the least any limiter pays that keeps Redis's clock and a state per
    // client (read the clock, read the state, write it with a TTL), deciding nothing. A ratio
    // to the best peer that this row does not reach, no such design reaches.
    const client = countedClient({ enableOfflineQueue: false, maxRetriesPerRequest: 0 })
    await new Promise((r) => client.once('ready', r))
    client.defineCommand('fgFloor', {
      numberOfKeys: 1,
      lua: FLOOR_LUA,
    })
    list.push({
      name: 'floor: `TIME`, `GET`, `SET … PX` in one script, no decision',
      client,
      op: (k) => client.fgFloor(`${PREFIX}:floor:${k}`),
    })
  }
  {
    // Not a contender either: the floor of a batched design (RedisStore's), the least it pays
    // that keeps Redis's clock and a state per client. Requests are batched as RedisStore's
    // queue batches them: one that finds nothing in flight and nothing queued leaves at once;
    // the others started in one turn of the event loop share one call, sent at the end of the
    // turn (setImmediate) or when it holds FLOOR_BATCH. The script reads `TIME` once, then
    // `GET` and `SET … PX` per key, and answers one number per request; it decides nothing.
    const client = countedClient({ enableOfflineQueue: false, maxRetriesPerRequest: 0 })
    await new Promise((r) => client.once('ready', r))
    client.defineCommand('fgFloorBatch', { lua: BATCHED_FLOOR_LUA })
    let inFlight = 0
    let open
    let flushScheduled = false
    const send = (batch) => {
      inFlight++
      client.fgFloorBatch(batch.keys.length, ...batch.keys).then(
        (reply) => {
          inFlight--
          batch.resolve.forEach((r, j) => r(reply[j]))
        },
        (err) => {
          inFlight--
          for (const r of batch.reject) r(err)
        },
      )
    }
    const flush = () => {
      flushScheduled = false
      const batch = open
      open = undefined
      if (batch) send(batch)
    }
    const op = (k) =>
      new Promise((resolve, reject) => {
        const key = `${PREFIX}:floorb:${k}`
        if (inFlight === 0 && open === undefined) {
          send({ keys: [key], resolve: [resolve], reject: [reject] })
          return
        }
        if (open === undefined) {
          open = { keys: [], resolve: [], reject: [] }
          if (!flushScheduled) {
            flushScheduled = true
            setImmediate(flush)
          }
        }
        const batch = open
        batch.keys.push(key)
        batch.resolve.push(resolve)
        batch.reject.push(reject)
        if (batch.keys.length >= FLOOR_BATCH) {
          // Full: sent now; the flush already scheduled sends the next batch, if one opens.
          open = undefined
          send(batch)
        }
      })
    list.push({
      name: `floor, batched: \`TIME\` once, \`GET\`, \`SET … PX\` per key, up to ${FLOOR_BATCH} requests a call, no decision`,
      client,
      op,
    })
  }
  return list
}

async function measure(c, inFlight, admin) {
  const sentBefore = c.client.sent
  const callsBefore = await commandCalls(admin)
  const cpuBefore = process.cpuUsage()
  let ops = 0
  let failed = 0
  let lastError
  let i = Math.floor(Math.random() * KEYS.length)
  const start = performance.now()
  const deadline = start + ROUND_MS
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < deadline) {
        // A call that fails (a timeout on a loaded machine) is no decision: counted apart, so
        // one slow call does not end the whole run.
        try {
          await c.op(KEYS[i++ % KEYS.length])
          ops++
        } catch (err) {
          failed++
          lastError = err
        }
      }
    }),
  )
  if (failed > 0) {
    console.error(
      `${c.name}, ${inFlight} in flight: ${failed} calls failed (${lastError?.message})`,
    )
  }
  const elapsed = performance.now() - start
  const cpu = process.cpuUsage(cpuBefore)
  const callsAfter = await commandCalls(admin)
  return {
    perSec: (ops / elapsed) * 1000,
    sent: (c.client.sent - sentBefore) / ops,
    calls: (callsAfter.calls - callsBefore.calls) / ops,
    redisUs: (callsAfter.usec - callsBefore.usec) / ops,
    nodeUs: (cpu.user + cpu.system) / ops,
  }
}

async function decisions() {
  const admin = new Redis(REDIS_URL)
  const list = await contenders()
  out('### Decisions per second on one Redis')
  out()
  out(
    `Node ${process.version}, redis ${(await admin.info('server')).match(/redis_version:(\S+)/)[1]}, ${ROUNDS} interleaved rounds of ${ROUND_MS} ms per cell, medians; 10 000 client keys, limits never reached. "vs best peer": each round's decisions/s over the best peer's in that round, median (lowest-highest) over the rounds.`,
  )
  out()
  out(
    '| store | in flight | decisions/s | vs best peer | commands sent / decision | Redis commands run / decision | Redis µs / decision | Node CPU µs / decision |',
  )
  out('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const inFlight of [1, 64]) {
    for (const c of list) await measure(c, inFlight, admin) // warm-up: JIT, script load
    const samples = list.map(() => [])
    for (let r = 0; r < ROUNDS; r++) {
      for (let j = 0; j < list.length; j++) {
        const i = (j + r) % list.length
        samples[i].push(await measure(list[i], inFlight, admin))
      }
    }
    const bestPeer = Array.from({ length: ROUNDS }, (_, r) =>
      Math.max(...list.flatMap((c, i) => (c.peer ? [samples[i][r].perSec] : []))),
    )
    list.forEach((c, i) => {
      const m = (f) => median(samples[i].map(f))
      const vsPeer = ratioRange(
        pairedRatios(
          samples[i].map((x) => x.perSec),
          bestPeer,
        ),
      )
      out(
        `| ${c.name} | ${inFlight} | ${Math.round(m((x) => x.perSec))} | ${vsPeer} | ${m((x) => x.sent).toFixed(2)} | ${m((x) => x.calls).toFixed(2)} | ${m((x) => x.redisUs).toFixed(1)} | ${m((x) => x.nodeUs).toFixed(1)} |`,
      )
    })
  }
  out()
  for (const c of list) c.client.disconnect()
  await cleanup(admin)
  admin.disconnect()
}

function cleanup(admin) {
  return deleteKeys(admin, `${PREFIX}*`)
}

/** A proxy in front of Redis that can stop moving bytes (a stalled link). */
async function stallableProxy(port) {
  const sockets = new Set()
  let stalled = false
  const server = net.createServer((client) => {
    const up = net.connect(port, '127.0.0.1')
    for (const s of [client, up]) {
      sockets.add(s)
      s.on('error', () => {})
      s.on('close', () => sockets.delete(s))
    }
    client.pipe(up)
    up.pipe(client)
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  return {
    port: server.address().port,
    stall() {
      stalled = true
      for (const s of sockets) s.pause()
    },
    close() {
      for (const s of sockets) s.destroy()
      server.close()
      return stalled
    },
  }
}

async function down() {
  const pct = (xs, p) =>
    [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]
  const rules = [{ id: 'per-ip', algorithm: 'token-bucket', limit: 100, window: '1s' }]
  const facts = { method: 'GET', path: '/', ip: '10.0.0.1', headers: {} }
  async function run(limiter, n, inFlight) {
    const ms = []
    let failedOpen = 0
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (ms.length < n) {
          const t = performance.now()
          const d = await limiter.check(facts)
          ms.push(performance.now() - t)
          if (d.failedOpen) failedOpen++
        }
      }),
    )
    return {
      p50: pct(ms, 50),
      p99: pct(ms, 99),
      max: Math.max(...ms),
      failedOpen: failedOpen / ms.length,
    }
  }
  out('### Added latency with Redis down (decisionTimeoutMs 50)')
  out()
  out('| fault | checks | p50 ms | p99 ms | max ms | failed open |')
  out('| --- | ---: | ---: | ---: | ---: | ---: |')
  const row = (name, n, r) =>
    out(
      `| ${name} | ${n} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.max.toFixed(2)} | ${(r.failedOpen * 100).toFixed(0)}% |`,
    )
  {
    // Killed: nothing listens on the port any more (connection refused, reconnecting).
    const port = await new Promise((r) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = s.address().port
        s.close(() => r(p))
      })
    })
    const store = createRedisStore({ url: `redis://127.0.0.1:${port}`, callTimeoutMs: 50 })
    const limiter = createLimiter({ store, rules, decisionTimeoutMs: 50 })
    row('killed (connection refused)', 2000, await run(limiter, 2000, 16))
    await limiter.close()
  }
  {
    const url = new URL(REDIS_URL)
    const proxy = await stallableProxy(Number(url.port || 6379))
    const store = createRedisStore({ url: `redis://127.0.0.1:${proxy.port}`, callTimeoutMs: 50 })
    await store.ready
    const limiter = createLimiter({ store, rules, decisionTimeoutMs: 50 })
    await run(limiter, 200, 4)
    proxy.stall()
    row('stalled (accepts, never answers)', 400, await run(limiter, 400, 16))
    proxy.close()
    await limiter.close()
  }
  out()
}

function startServer(variant) {
  const child = fork(join(here, 'server.mjs'), [variant], {
    cwd: here,
    env: { ...process.env, REDIS_URL, BENCH_PREFIX: PREFIX },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve({ child, port: m.port, variant }))
    child.once('exit', (code) => reject(new Error(`${variant} exited with ${code}`)))
  })
}

async function http() {
  const variants = ['bare', 'floodgate-redis', 'peer-redis']
  const names = {
    bare: 'bare Fastify',
    'floodgate-redis': 'Fastify + Floodgate (RedisStore)',
    'peer-redis': 'Fastify + @fastify/rate-limit (Redis)',
  }
  const servers = await Promise.all(variants.map(startServer))
  const admin = new Redis(REDIS_URL)
  const cpu = (s) =>
    new Promise((resolve) => {
      s.child.once('message', (m) => resolve(m.cpuUs))
      s.child.send('cpu')
    })
  // Server CPU and Redis script time per response: steadier than req/s on a busy 2-core box.
  const hit = async (s, seconds) => {
    const cpuBefore = await cpu(s)
    const redisBefore = (await commandCalls(admin)).usec
    const res = await autocannon({
      url: `http://127.0.0.1:${s.port}/`,
      connections: CONNECTIONS,
      duration: seconds,
    })
    const n = Math.max(1, res.requests.total)
    res.cpuUs = ((await cpu(s)) - cpuBefore) / n
    res.redisUs = ((await commandCalls(admin)).usec - redisBefore) / n
    return res
  }
  for (const s of servers) await hit(s, 1)
  const samples = servers.map(() => [])
  for (let r = 0; r < ROUNDS; r++) {
    for (let j = 0; j < servers.length; j++) {
      const i = (j + r) % servers.length
      const res = await hit(servers[i], SECONDS)
      samples[i].push({
        rps: res.requests.average,
        p99: res.latency.p99,
        non2xx: res.non2xx,
        cpuUs: res.cpuUs,
        redisUs: res.redisUs,
      })
    }
  }
  for (const s of servers) s.child.kill()
  out(
    `### HTTP: Fastify on Redis (${CONNECTIONS} connections, ${ROUNDS} interleaved rounds of ${SECONDS} s, medians; "vs bare": each round's req/s over bare's in that round, median (lowest-highest))`,
  )
  out()
  out(
    '| server | req/s | vs bare | p99 ms | server CPU µs / response | Redis µs / response | non-2xx |',
  )
  out('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
  const bareRps = samples[0].map((x) => x.rps)
  variants.forEach((v, i) => {
    const m = (f) => median(samples[i].map(f))
    const rps = m((x) => x.rps)
    const vsBare = ratioRange(
      pairedRatios(
        samples[i].map((x) => x.rps),
        bareRps,
      ),
    )
    out(
      `| ${names[v]} | ${Math.round(rps)} | ${vsBare} | ${m((x) => x.p99)} | ${m((x) => x.cpuUs).toFixed(1)} | ${m((x) => x.redisUs).toFixed(1)} | ${samples[i].reduce((a, x) => a + x.non2xx, 0)} |`,
    )
  })
  out()
  await cleanup(admin)
  admin.disconnect()
}

const started = Date.now()
if (PARTS.has('decisions')) await decisions()
if (PARTS.has('down')) await down()
if (PARTS.has('http')) await http()
out(`(${Math.round((Date.now() - started) / 1000)} s in all)`)
process.exit(0)
