// Redis benchmark, deterministic flavour: Redis-side instructions per script call, counted by
// valgrind's callgrind on a private redis-server.
//
//   node bench/redis/instructions.mjs    (after `pnpm build`; needs valgrind and redis-server)
//
// A lone request's latency is mostly fixed costs; this weighs the Redis part of it. The server
// runs under callgrind with instrumentation off; each script is loaded, called 500 times to
// warm up, then instrumentation is switched on for BENCH_CALLS calls sent one at a time, on 500
// keys (16 per call for a batch) that already exist, and the total is divided by the calls and
// by the decisions per call. The figure is the whole command in Redis: reading it, running the
// script, replying. Besides RedisStore's own scripts (captured from a real store, for a lone
// request of each algorithm, beside the general script given the same call, and for a batch
// of 16, what 64 requests in flight send), it weighs the floors: an
// empty script, the commands the script needs (TIME, GET, SET PX, with the TTL given as a
// string: Lua formats a number through glibc's float printer) and nothing else, per key for a
// batch (one MGET, then SET PX or PSETEX per key, 16 and 64 keys; and the batched floor that
// bench/redis/run.mjs times, `TIME` once, GET and SET PX per key, one number answered per key),
// and rate-limit-redis's commands.
// The general script is also weighed for batches of 1, 4, 16 and 64 one-rule requests (built
// from the captured batch's first request; RedisStore sends at most 16 per call, 64 shows where
// the per-decision cost tends), with fewer calls for the larger batches (at least 500), and
// for a batch of 16 whose requests all differ (each of another cost).
// Requests of two rules (a token bucket and a fixed window) are weighed alone and as a batch
// of 16, captured the same way.
// Env: BENCH_CALLS (3000), BENCH_REDIS_PORT (a free port), BENCH_ONLY (a regular expression:
// only the scripts whose name matches), BENCH_BATCH_ALGORITHM (token-bucket: the algorithm of the
// rule the batches are captured with), BENCH_LUA (files of Lua, comma-separated: each weighed as
// RedisStore's batch script on the captured batch of 16 and on the batch that all differ, for
// trying a variant of the script), BENCH_LUA_UNMARKED (the same, given the batches unmarked:
// every request's entry count positive, as a script from before the keys' mark reads them; for
// weighing an older build's generated script beside the current one in one process).
import { Buffer } from 'node:buffer'
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { ensureBuilt } from '../ensure-built.mjs'
import { BATCHED_FLOOR_LUA, FLOOR_BATCH, FLOOR_LUA } from './floor-script.mjs'

const CALLS = Number(process.env.BENCH_CALLS ?? 3000)
const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined
const WARMUP = 500
for (const cmd of ['valgrind', 'callgrind_control', 'redis-server']) {
  if (spawnSync(cmd, ['--version']).status !== 0) {
    console.error(`bench/redis/instructions.mjs needs ${cmd} on PATH`)
    process.exit(1)
  }
}
ensureBuilt(['core', 'redis'])
const { createLimiter } = await import('@floodgate/core')
const { createRedisStore } = await import('@floodgate/redis')

const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port
      s.close(() => resolve(p))
    })
  })
const PORT = Number(process.env.BENCH_REDIS_PORT ?? (await freePort()))
const dir = mkdtempSync(join(tmpdir(), 'floodgate-redis-callgrind-'))
if (process.env.KEEP) console.error(dir)
const server = spawn(
  'valgrind',
  [
    '--tool=callgrind',
    '--instr-atstart=no',
    `--callgrind-out-file=${join(dir, 'redis')}`,
    `--log-file=${join(dir, 'log')}`,
    'redis-server',
    '--port',
    String(PORT),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
  ],
  { stdio: 'ignore' },
)
process.on('exit', () => {
  server.kill('SIGKILL')
  if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true })
})
const ctl = (...args) =>
  execFileSync('callgrind_control', [...args, String(server.pid)], { stdio: 'ignore' })

const client = new Redis({ port: PORT, lazyConnect: true, retryStrategy: () => 300 })
client.on('error', () => {})
const until = Date.now() + 60_000
while (client.status !== 'ready') {
  if (Date.now() > until) throw new Error('redis-server under valgrind did not start within 60 s')
  await client.connect().catch(() => new Promise((r) => setTimeout(r, 300)))
}

// RedisStore's script for one token-bucket rule and the arguments of one consume of cost 1,
// read from the frame the store's own call writes (EVAL with the script on a connection that
// has not run it: the frame carries both).
// The first frame is a lone request (EVAL with the script). Then BATCH + 1 requests start in
// one turn, as 64 in flight do: the first goes at once, the other BATCH wait and go as one
// batch (an EVALSHA; the script is the same, its algorithms are).
const BATCH = 16
// Every algorithm, each weighed for one lone request (limits never reached; a concurrency
// slot is never released, so its keys hold a few leases each; the log's state holds a slot
// per unit of its limit), with the script RedisStore sends it (the lone script) and with the
// general script (captured from a refund, which goes there).
const ALGORITHMS = [
  ['token-bucket', '1h'],
  ['fixed-window', '1h'],
  ['gcra', '1h'],
  ['leaky-bucket', '1h'],
  ['sliding-window-counter', '1h'],
  ['sliding-window-log', '1h', 100],
  ['concurrency', undefined],
]
const frames = []
const sha = (s) => createHash('sha1').update(s).digest('hex')
const scriptBySha = new Map()
let twoFrom = 0
let twoTo = 0
{
  const spy = new Redis({
    port: PORT,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
  })
  await new Promise((r) => spy.once('ready', r))
  const send = spy.sendCommand.bind(spy)
  spy.sendCommand = (cmd) => {
    if (/^eval/.test(cmd.name)) {
      const frame = cmd.toWritable({})
      const args = []
      let pos = frame.indexOf('\r\n') + 2
      while (pos < frame.length) {
        const eol = frame.indexOf('\r\n', pos)
        const len = Number(frame.subarray(pos + 1, eol).toString())
        args.push(frame.subarray(eol + 2, eol + 2 + len))
        pos = eol + 4 + len
      }
      // eval(sha), script or sha, numkeys, keys…, argv…: strings but the last (the packed batch).
      // The command is named evalsha whichever it writes.
      const lua = args[1].toString()
      const evaluated = args[0].toString().toLowerCase() === 'eval'
      if (evaluated) scriptBySha.set(sha(lua), lua)
      frames.push({
        lua: evaluated ? lua : scriptBySha.get(lua),
        args: args.slice(2).map((a, i, all) => (i === all.length - 1 ? a : a.toString())),
      })
    }
    return send(cmd)
  }
  const store = createRedisStore({ client: spy, prefix: 'fgbench-cg', callTimeoutMs: 60_000 })
  const limiter = createLimiter({ store, rules: [] })
  const [rule] = limiter.compileRules([
    {
      id: 'tb',
      algorithm: process.env.BENCH_BATCH_ALGORITHM ?? 'token-bucket',
      limit: 1_000_000_000,
      window: '1h',
    },
  ]).rules
  const entry = (key, r = rule) => [{ rule: r, key, cost: 1, maxWaitMs: 0, shadow: false }]
  await store.consume(entry('k'), 0)
  await Promise.all(Array.from({ length: BATCH + 1 }, (_, j) => store.consume(entry(`k${j}`), 0)))
  // Requests of two rules (a token bucket and a fixed window on one client key, as the
  // timing benchmark's): one alone, then a batch of BATCH, as for one rule.
  const two = limiter.compileRules(
    ['token-bucket', 'fixed-window'].map((algorithm) => ({
      id: `two-${algorithm}`,
      algorithm,
      limit: 1_000_000_000,
      window: '1h',
    })),
  ).rules
  const twoEntries = (key) => two.flatMap((r) => entry(key, r))
  twoFrom = frames.length
  await store.consume(twoEntries('k'), 0)
  await Promise.all(
    Array.from({ length: BATCH + 1 }, (_, j) => store.consume(twoEntries(`k${j}`), 0)),
  )
  twoTo = frames.length
  // One lone request of each algorithm, then one refund (the general script's).
  for (const other of limiter.compileRules(
    ALGORITHMS.map(([algorithm, window, limit = 1_000_000_000]) => ({
      id: algorithm,
      algorithm,
      limit,
      window,
    })),
  ).rules) {
    await store.consume(entry('k', other), 0)
    await store.refund(entry('k', other), 0)
  }
  await limiter.close()
  spy.disconnect()
}
const batch = frames.find((f) => Number(f.args[0]) === BATCH)
if (!batch) throw new Error(`expected a batch of ${BATCH}`)
const lones = frames.slice(-2 * ALGORITHMS.length)
const twoLone = frames[twoFrom]
const twoBatch = frames.slice(twoFrom, twoTo).find((f) => Number(f.args[0]) === 2 * BATCH)
if (!twoLone || Number(twoLone.args[0]) !== 2 || !twoBatch) {
  throw new Error(`expected a lone two-rule request and a batch of ${BATCH}`)
}
const argvOf = (frame) => frame.args.slice(1 + Number(frame.args[0]))
const batchArgs = argvOf(batch)

// A batch of `size` one-rule requests: the captured batch's first request, repeated.
const BATCH_SIZES = [1, 4, 16, 64]
// A request's mode byte (its third) is its mode plus 8 times the requests after it that repeat
// it, which are not packed (see packages/redis/src/wire-format.ts): the captured batch of 16 is
// one packed request that 15 repeat. `firstRequest` is that one alone. Its entry count is
// negated: RedisStore marks a call whose keys all differ, as the bench's keys do.
const REQUEST_BYTES = 3 + 1 + 8 * 8
const REPEAT_STEP = 8
const MAX_REPEATS = 31
const firstRequest = Buffer.from(batchArgs.at(-1).subarray(0, REQUEST_BYTES))
firstRequest[2] %= REPEAT_STEP
const batchOf = (size) => {
  const packed = []
  for (let left = size; left > 0; left -= MAX_REPEATS + 1) {
    const r = Buffer.from(firstRequest)
    r[2] += REPEAT_STEP * (Math.min(left, MAX_REPEATS + 1) - 1)
    packed.push(r)
  }
  return [...batchArgs.slice(0, -1), Buffer.concat(packed)]
}
// The same batch with every request's cost different (1, 2, …): no request repeats the one
// before it, so each is packed and the script unpacks each (the cost is the double after the request's 3-byte
// header, the entry's algorithm byte and its limit, window and burst).
const COST_OFFSET = 3 + 1 + 3 * 8
if (firstRequest.readDoubleLE(COST_OFFSET) !== 1) throw new Error('expected a cost of 1 there')
const distinctBatchOf = (size) => [
  ...batchArgs.slice(0, -1),
  Buffer.concat(
    Array.from({ length: size }, (_, j) => {
      const r = Buffer.from(firstRequest)
      r.writeDoubleLE(j + 1, COST_OFFSET)
      return r
    }),
  ),
]

// A call's ARGV with its packed batch unmarked: each request's entry count made positive (see
// `encodeRequests`), as scripts from before the mark read it.
const unmarked = (args) => {
  const blob = Buffer.from(args.at(-1))
  for (let pos = 0; pos < blob.length;) {
    const n = Math.abs(blob.readInt16LE(pos))
    blob.writeInt16LE(n, pos)
    // Repeated requests are not packed: the next packed request follows this one's entries.
    pos += 3 + n * (1 + 8 * 8)
  }
  return [...args.slice(0, -1), blob]
}

let contenderIndex = 0
// `keys` keys per call, `perDecision` of them per decision (a request of that many rules).
const script = (name, lua, args = [], keys = 1, perDecision = 1) => {
  const prefix = `fgbench-cg:${contenderIndex++}:`
  return {
    name,
    decisions: keys / perDecision,
    // Larger batches need fewer calls for as many decisions.
    calls: keys <= 4 ? CALLS : Math.max(500, Math.round((CALLS * 4) / keys)),
    setup: () => client.script('LOAD', lua),
    call: (i) =>
      client.evalsha(
        sha(lua),
        keys,
        ...Array.from(
          { length: keys },
          (_, j) => `${prefix}${(i * keys + j) % (500 * perDecision)}`,
        ),
        ...args,
      ),
  }
}
const setEach = `for j = 1, #KEYS do redis.call('SET', KEYS[j], '0123456789abcdef', 'PX', '3600000') end`
const psetexEach = `for j = 1, #KEYS do redis.call('PSETEX', KEYS[j], '3600000', '0123456789abcdef') end`
const contenders = [
  script('`return 1` (any EVALSHA)', 'return 1'),
  script('`TIME`, `GET`, `SET … PX` and nothing else', FLOOR_LUA),
  script(
    "rate-limit-redis's script (`INCR`, `PTTL`)",
    `local totalHits = redis.call("INCR", KEYS[1])
local timeToExpire = redis.call("PTTL", KEYS[1])
if timeToExpire <= 0 or ARGV[1] == "1" then
  redis.call("PEXPIRE", KEYS[1], tonumber(ARGV[2]))
  timeToExpire = tonumber(ARGV[2])
end
return { totalHits, timeToExpire }`,
    ['0', '3600000'],
  ),
  script(
    `\`TIME\`, then \`GET\` and \`SET … PX\` per key, ${BATCH} keys`,
    `redis.call('TIME') for j = 1, #KEYS do redis.call('GET', KEYS[j]) end ${setEach} return 1`,
    [],
    BATCH,
  ),
  // The floor of a batched design, as bench/redis/run.mjs times it: the above, answering one
  // number per request.
  script(
    `floor, batched: \`TIME\` once, \`GET\` and \`SET … PX\` per key, one number answered per key, ${FLOOR_BATCH} keys`,
    BATCHED_FLOOR_LUA,
    [],
    FLOOR_BATCH,
  ),
  script(`RedisStore's script, a batch of ${BATCH} requests`, batch.lua, batchArgs, BATCH),
  // Script variants under trial (BENCH_LUA: files of Lua, comma-separated), given the captured
  // batch of 16 and the batch whose requests all differ; BENCH_LUA_UNMARKED's given them unmarked.
  ...[
    ['BENCH_LUA', (args) => args],
    ['BENCH_LUA_UNMARKED', unmarked],
  ].flatMap(([env, as]) =>
    (process.env[env] ?? '')
      .split(',')
      .filter(Boolean)
      .flatMap((file) => {
        const lua = readFileSync(file, 'utf8')
        const tag = env === 'BENCH_LUA' ? '' : ' (unmarked)'
        return [
          script(`${file}, a batch of ${BATCH} requests${tag}`, lua, as(batchArgs), BATCH),
          script(
            `${file}, a batch of ${BATCH} that all differ${tag}`,
            lua,
            as(distinctBatchOf(BATCH)),
            BATCH,
          ),
        ]
      }),
  ),
  ...BATCH_SIZES.map((size) =>
    script(
      `the general script, a batch of ${size} one-rule requests`,
      batch.lua,
      batchOf(size),
      size,
    ),
  ),
  script(
    `the general script, a batch of ${BATCH} one-rule requests, each of another cost`,
    batch.lua,
    distinctBatchOf(BATCH),
    BATCH,
  ),
  script("RedisStore's script, one request of two rules", twoLone.lua, argvOf(twoLone), 2, 2),
  script(
    `RedisStore's script, a batch of ${BATCH} requests of two rules`,
    twoBatch.lua,
    argvOf(twoBatch),
    2 * BATCH,
    2,
  ),
  ...[16, 64].flatMap((keys) => [
    script(
      `\`TIME\`, one \`MGET\`, then \`SET … PX\` per key, ${keys} keys`,
      `redis.call('TIME') redis.call('MGET', unpack(KEYS)) ${setEach} return 1`,
      [],
      keys,
    ),
    script(
      `\`TIME\`, one \`MGET\`, then \`PSETEX\` per key, ${keys} keys`,
      `redis.call('TIME') redis.call('MGET', unpack(KEYS)) ${psetexEach} return 1`,
      [],
      keys,
    ),
  ]),
  ...ALGORITHMS.flatMap(([algorithm], i) => {
    const [lone, general] = [lones[2 * i], lones[2 * i + 1]]
    return [
      // The lone script: for an algorithm whose state is a few doubles, its Lua run inline.
      script(`RedisStore's lone script, one ${algorithm} rule`, lone.lua, argvOf(lone)),
      script(`the general script, the same ${algorithm} call`, general.lua, argvOf(lone)),
    ]
  }),
]

const counts = []
for (const c of contenders) {
  if (ONLY && !ONLY.test(c.name)) continue
  await c.setup()
  for (let i = 0; i < WARMUP; i++) await c.call(i)
  ctl('--zero')
  ctl('--instr=on')
  for (let i = 0; i < c.calls; i++) await c.call(i)
  ctl('--instr=off')
  ctl(`--dump=c${counts.length}`)
  counts.push(c)
}
// Dumps are written asynchronously; wait for all of them.
const dumps = () => readdirSync(dir).filter((f) => /^redis\.\d+$/.test(f))
const deadline = Date.now() + 30_000
while (dumps().length < counts.length && Date.now() < deadline)
  await new Promise((r) => setTimeout(r, 200))
const byTrigger = new Map()
for (const f of dumps()) {
  const text = readFileSync(join(dir, f), 'utf8')
  const trigger = text.match(/^desc: Trigger: (?:.*--dump=|dump )(c\d+)$/m)?.[1]
  const total = Number(text.match(/^totals: (\d+)/m)?.[1])
  if (trigger) byTrigger.set(trigger, total)
}
const version = (await client.info('server')).match(/redis_version:(\S+)/)[1]
console.log(`### Redis instructions per script call, one call in flight`)
console.log()
console.log(
  `redis-server ${version} under callgrind, ${CALLS} calls one at a time (batches of more than 4: fewer, at least 500) after ${WARMUP} to warm up, 500 keys.`,
)
console.log()
console.log('| script | decisions / call | k instructions / call | k instructions / decision |')
console.log('| --- | ---: | ---: | ---: |')
counts.forEach(({ name, decisions, calls }, i) => {
  const total = byTrigger.get(`c${i}`)
  const per = (n) => (total === undefined ? 'no dump' : (total / calls / n / 1000).toFixed(1))
  console.log(`| ${name} | ${decisions} | ${per(1)} | ${per(decisions)} |`)
})
client.disconnect()
process.exit(0)
