// Redis benchmark, deterministic flavour, Node side: instructions Node runs per decision with
// one decision in flight, counted by valgrind's callgrind.
//
//   node bench/redis/node-instructions.mjs    (after `pnpm build`; needs valgrind, a Redis)
//
// Each contender runs in its own `node --single-threaded --single-threaded-gc` under
// `valgrind --tool=callgrind --instr-atstart=no`: BENCH_WARMUP decisions one at a time (each
// awaited) to let the JIT settle, then instrumentation is switched on for BENCH_DECISIONS more
// and the main thread's total is divided by them. What is counted is everything Node does for
// a decision: the store's own code, ioredis's command building and reply parsing, promises,
// timers, the socket write and read (the kernel's side of a syscall is not counted). Redis is
// REDIS_URL (default redis://127.0.0.1:6379), keys under a prefix of their own, deleted after.
// Env: BENCH_CONTENDERS (all, comma-separated names below), BENCH_WARMUP (20000, times
// in-flight / 16 when more than 16 are in flight),
// BENCH_DECISIONS (5000), BENCH_IN_FLIGHT (1: decisions started together in one turn and
// awaited together, a multiple of it counted; RedisStore sends the first alone when idle and
// batches the rest, 16 per call), KEEP=1 keeps the callgrind files and prints where (run with
// BENCH_PROFILE=1 to also dump per-instruction data and a perf map, then
// `node bench/redis/node-instructions.mjs --annotate <file> <decisions>` names the functions).
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import {
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  rmSync,
  writeSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { inclusiveCosts, selfCosts } from '../callgrind-functions.mjs'
import { ensureBuilt } from '../ensure-built.mjs'
import { deleteKeys } from '../redis-keys.mjs'

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
// The store's deadline. Its timer is armed once per deadline at one request in flight: about
// once per 5000 decisions at 1 s natively, but every few dozen under valgrind's slowdown, so
// the count uses a deadline that never comes up in the window (as at native speed).
const DEADLINE_MS = 60_000
const KEYS = Array.from({ length: 10_000 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.7`)

/** A limiter-safe client, once connected, and a RedisStore on it under `prefix`. */
async function floodgateStore(prefix) {
  const { Redis } = await import('ioredis')
  const { createRedisStore } = await import('@floodgate/redis')
  const client = new Redis(REDIS_URL, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
  })
  await new Promise((r) => client.once('ready', r))
  return { client, store: createRedisStore({ client, prefix, callTimeoutMs: DEADLINE_MS }) }
}

/** Each contender: one decision, as bench/redis/run.mjs makes it. */
const CONTENDERS = {
  'floodgate-consume': async (prefix) => {
    const { createLimiter } = await import('@floodgate/core')
    const { client, store } = await floodgateStore(prefix)
    const limiter = createLimiter({ store, rules: [] })
    const [rule] = limiter.compileRules([
      { id: 'per-ip', algorithm: 'token-bucket', limit: 1_000_000_000, window: '1h' },
    ]).rules
    return {
      client,
      op: (k) => store.consume([{ rule, key: k, cost: 1, maxWaitMs: 0, shadow: false }], 0),
    }
  },
  'floodgate-check': async (prefix) => {
    const { createLimiter } = await import('@floodgate/core')
    const { client, store } = await floodgateStore(prefix)
    const limiter = createLimiter({
      store,
      decisionTimeoutMs: DEADLINE_MS,
      rules: [{ id: 'per-ip', algorithm: 'token-bucket', limit: 1_000_000_000, window: '1h' }],
    })
    return { client, op: (k) => limiter.check({ method: 'GET', path: '/', ip: k, headers: {} }) }
  },
  'rate-limit-redis': async (prefix) => {
    const { Redis } = await import('ioredis')
    const { RedisStore } = await import('rate-limit-redis')
    const client = new Redis(REDIS_URL)
    await new Promise((r) => client.once('ready', r))
    const store = new RedisStore({ sendCommand: (...args) => client.call(...args), prefix })
    store.init({ windowMs: 3_600_000 })
    return { client, op: (k) => store.increment(k) }
  },
  'rate-limiter-flexible': async (prefix) => {
    const { Redis } = await import('ioredis')
    const { RateLimiterRedis } = await import('rate-limiter-flexible')
    const client = new Redis(REDIS_URL, { enableOfflineQueue: false })
    await new Promise((r) => client.once('ready', r))
    const rl = new RateLimiterRedis({
      storeClient: client,
      keyPrefix: prefix,
      points: 1_000_000_000,
      duration: 3600,
    })
    return { client, op: (k) => rl.consume(k) }
  },
  'fastify-rate-limit': async (prefix) => {
    const { Redis } = await import('ioredis')
    const { default: Store } = await import('@fastify/rate-limit/store/RedisStore.js')
    const client = new Redis(REDIS_URL)
    await new Promise((r) => client.once('ready', r))
    const store = new Store(false, false, client, prefix)
    const op = (k) =>
      new Promise((resolve, reject) =>
        store.incr(k, (err, res) => (err ? reject(err) : resolve(res)), 3_600_000, 1_000_000_000),
      )
    return { client, op }
  },
}

/** Child: warm up, say so, wait for the go, run the counted decisions, say so, wait. */
async function child(name) {
  const prefix = `fgnodeinstr${process.pid}:${name}:`
  const { client, op } = await CONTENDERS[name](prefix)
  // Signals by blocking syscalls, not streams: a stream write would run (and deoptimize) the
  // same Writable code the Redis socket uses, inside the counted window. The two calls are
  // warmed up on /dev/null and /dev/zero, so their first real use compiles nothing either.
  const word = Buffer.from('warm\n')
  const reply = Buffer.alloc(16)
  const say = (fd, text) => writeSync(fd, word, 0, word.write(text))
  const wait = (fd) => readSync(fd, reply, 0, reply.length, null)
  const devNull = openSync('/dev/null', 'w')
  const devZero = openSync('/dev/zero', 'r')
  // BENCH_IN_FLIGHT decisions started in one turn, awaited together, then the next group.
  const inFlight = Number(process.env.BENCH_IN_FLIGHT ?? 1)
  const group = new Array(inFlight)
  const run = async (n, from, warm) => {
    for (let i = 0; i < n; i += inFlight) {
      if (inFlight === 1) await op(KEYS[(from + i) % KEYS.length])
      else {
        for (let j = 0; j < inFlight; j++) group[j] = op(KEYS[(from + i + j) % KEYS.length])
        await Promise.all(group)
      }
      if (warm && i % (8 * inFlight) === 0) {
        say(devNull, 'warm\n')
        wait(devZero)
      }
    }
  }
  const warmup = warmupDecisions(inFlight)
  const n = Number(process.env.BENCH_DECISIONS ?? 5000)
  await run(warmup, 0, true)
  // Start the window a fixed distance after an empty young generation: how many scavenges
  // fall in it then depends on what the decisions allocate, not on where the warm-up left
  // off (one more or less moved the figure by 1-2k). A full collection also drops some
  // compiled code: the decisions after it compile it again, before the window.
  globalThis.gc()
  await run(5000, warmup, true)
  say(1, 'warm\n')
  wait(0)
  await run(n, warmup, false)
  say(1, 'done\n')
  wait(0)
  // Not counted: clean the keys up.
  await deleteKeys(client, `${prefix}*`)
  client.disconnect()
  process.exit(0)
}

/**
 * Decisions run before the count. A batch's own functions (its send, its reply) run once per
 * call, 16 decisions at a time: with as many decisions as at 1 in flight they were still being
 * optimised inside the window at 64 (26.6k a decision counted after 20 000, 22.0k after 80 000,
 * 21.5k after 160 000), so the warm-up grows with the calls' size.
 */
function warmupDecisions(inFlight) {
  return Number(process.env.BENCH_WARMUP ?? 20_000 * Math.max(1, Math.ceil(inFlight / 16)))
}

/** Parent: one contender under callgrind; returns its main thread's instructions. */
async function measure(name, dir) {
  const profile = process.env.BENCH_PROFILE === '1'
  const out = join(dir, name)
  const proc = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      '--separate-threads=yes',
      ...(profile ? ['--dump-instr=yes'] : []),
      `--callgrind-out-file=${out}.%p`,
      `--log-file=${out}.log`,
      process.execPath,
      '--single-threaded',
      '--single-threaded-gc',
      '--expose-gc',
      // A fixed young generation (Node's own starts at this size and grows under load), so
      // the number of scavenges in the window follows what the decisions allocate.
      '--min-semi-space-size=1',
      '--max-semi-space-size=1',
      ...(profile ? ['--perf-basic-prof'] : []),
      fileURLToPath(import.meta.url),
      '--child',
      name,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  )
  const lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]()
  const expect = async (word) => {
    const { value } = await lines.next()
    if (value !== word) throw new Error(`${name}: expected "${word}", got ${value}`)
  }
  const ctl = (...args) =>
    execFileSync('callgrind_control', [...args, String(proc.pid)], { stdio: 'ignore' })
  await expect('warm')
  ctl('--zero')
  ctl('--instr=on')
  proc.stdin.write('go\n')
  await expect('done')
  ctl('--instr=off')
  ctl('--dump=counted')
  proc.stdin.write('stop\n')
  await new Promise((r) => proc.once('exit', r))
  // With --separate-threads, the main thread's dump ends in -01.
  const file = readdirSync(dir).find(
    (f) => f.startsWith(`${name}.${proc.pid}.`) && f.endsWith('-01'),
  )
  if (!file) throw new Error(`${name}: no dump of the main thread in ${dir}`)
  const text = readFileSync(join(dir, file), 'utf8')
  if (!/^desc: Trigger: .*counted/m.test(text)) throw new Error(`${name}: ${file} is not the dump`)
  return { total: Number(text.match(/^totals: (\d+)/m)[1]), file: join(dir, file) }
}

/**
 * Self instructions by function, JIT code named through V8's perf map (`--perf-basic-prof`),
 * from a callgrind file written with --dump-instr=yes.
 */
/** Print the heaviest functions per decision: own cost, then inclusive for JavaScript. */
function annotate(file, decisions, top = 40) {
  const print = (costs) => {
    for (const [n, c] of costs.sort((x, y) => y[1] - x[1]).slice(0, top)) {
      console.log(`${(c / decisions).toFixed(0).padStart(8)}  ${n}`)
    }
  }
  const self = [...selfCosts(file)]
  const total = self.reduce((sum, [, c]) => sum + c, 0)
  console.log(`${(total / decisions).toFixed(0)} instructions / decision (self costs summed)`)
  print(self)
  console.log()
  console.log('inclusive, JavaScript functions only:')
  print([...inclusiveCosts(file)].filter(([n]) => n.startsWith('JS:')))
}

if (process.argv[2] === '--child') {
  await child(process.argv[3])
} else if (process.argv[2] === '--annotate') {
  // --annotate <file> <decisions> [top]
  annotate(process.argv[3], Number(process.argv[4]), Number(process.argv[5] ?? 40))
} else {
  if (spawnSync('valgrind', ['--version']).status !== 0) {
    console.error('bench/redis/node-instructions.mjs needs valgrind on PATH')
    process.exit(1)
  }
  ensureBuilt(['core', 'redis'])
  const names = (process.env.BENCH_CONTENDERS ?? Object.keys(CONTENDERS).join(',')).split(',')
  const inFlight = Number(process.env.BENCH_IN_FLIGHT ?? 1)
  // The child counts whole groups of inFlight decisions.
  const n = Math.ceil(Number(process.env.BENCH_DECISIONS ?? 5000) / inFlight) * inFlight
  const dir = mkdtempSync(join(tmpdir(), 'floodgate-node-callgrind-'))
  const how = inFlight === 1 ? 'one at a time' : `${inFlight} at a time`
  console.log(`### Node instructions per decision, ${inFlight} in flight`)
  console.log()
  console.log(
    `Node ${process.version} (--single-threaded --single-threaded-gc, 1 MB semi-space) under callgrind, main thread, ${n} decisions ${how} after ${warmupDecisions(inFlight)} to warm up, a full GC and 5000 more.`,
  )
  console.log()
  console.log('| contender | k instructions / decision |')
  console.log('| --- | ---: |')
  for (const name of names) {
    const r = await measure(name, dir)
    console.log(`| ${name} | ${(r.total / n / 1000).toFixed(1)} |`)
    if (process.env.BENCH_PROFILE === '1') {
      console.error(`annotate: node ${process.argv[1]} --annotate ${r.file} ${n}`)
    }
  }
  if (process.env.KEEP) console.error(dir)
  else rmSync(dir, { recursive: true, force: true })
}
