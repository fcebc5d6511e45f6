// What installing an adapter costs a user: the node_modules bytes it adds and how long a cold
// `import()` of it takes, beside express-rate-limit, in one run. The adapters are installed
// from their `pnpm pack` tarballs (what npm would publish) into fresh throwaway npm projects,
// each next to a project holding only its framework, whose size is subtracted.
//
//   node bench/footprint/run.mjs            # FOOTPRINT_RUNS=21 fresh processes per import
//
// The "building blocks" table measures the validation and YAML libraries that were weighed
// for the rules schema (see docs/benchmarks.md), installed alone.
import { execFileSync, spawnSync } from 'node:child_process'
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ensureBuilt } from '../ensure-built.mjs'
import { median } from '../stats.mjs'

const RUNS = Number(process.env.FOOTPRINT_RUNS ?? 21)
const root = fileURLToPath(new URL('../..', import.meta.url))
// The frameworks and the peer as the rest of the benchmarks pin them (bench/package.json).
const EXPRESS = 'express@5.2.1'
const FASTIFY = 'fastify@5.12.8'
const KOA = 'koa@3.3.0'
const PEER = 'express-rate-limit@8.7.4'
const YAML = 'yaml@2.9.1'
const BLOCKS = ['zod@4.6.7', 'valibot@1.5.0', YAML]

ensureBuilt(['client', 'core', 'express', 'fastify', 'koa'])
const work = mkdtempSync(join(tmpdir(), 'floodgate-footprint-'))
process.on('exit', () => rmSync(work, { recursive: true, force: true }))

function pack(pkg) {
  const dest = join(work, 'tarballs')
  mkdirSync(dest, { recursive: true })
  // pnpm pack prints the tarball's path last.
  const out = execFileSync('pnpm', ['pack', '--pack-destination', dest], {
    cwd: join(root, 'packages', pkg),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  })
  return out.trim().split('\n').at(-1).trim()
}

function project(name, specs) {
  const dir = join(work, name)
  mkdirSync(dir)
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, private: true }))
  if (specs.length > 0) {
    execFileSync(
      'npm',
      ['install', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error', ...specs],
      { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] },
    )
  }
  return dir
}

/** Disk usage (512-byte blocks, as `du` counts) and apparent bytes of a tree. */
function sizeOf(path) {
  let disk = 0
  let bytes = 0
  const walk = (p) => {
    const st = lstatSync(p, { throwIfNoEntry: false })
    if (!st) return
    disk += st.blocks * 512
    bytes += st.size
    if (st.isDirectory()) for (const e of readdirSync(p)) walk(join(p, e))
  }
  walk(path)
  return { disk, bytes }
}

const mb = (n) => `${(n / 1e6).toFixed(2)} MB`
const ms = (n) => `${Math.round(n)} ms`

console.error('packing the adapters and installing the throwaway projects…')
// Core depends on @floodgate/client: installed from its tarball beside core, as npm would.
const core = [pack('client'), pack('core')]
const tar = { express: pack('express'), fastify: pack('fastify'), koa: pack('koa') }
const base = {
  none: project('empty', []),
  express: project('express', [EXPRESS]),
  fastify: project('fastify', [FASTIFY]),
  koa: project('koa', [KOA]),
}
// Every row: what is installed, beside which framework, and what a user imports.
const rows = [
  {
    name: PEER,
    dir: project('peer', [EXPRESS, PEER]),
    base: base.express,
    entry: 'express-rate-limit',
  },
  {
    name: '@floodgate/express',
    dir: project('fg-express', [EXPRESS, ...core, tar.express]),
    base: base.express,
    entry: '@floodgate/express',
  },
  {
    // What a user who keeps rules in a YAML file installs: yaml is an optional peer.
    name: '@floodgate/express + yaml',
    dir: project('fg-express-yaml', [EXPRESS, ...core, tar.express, YAML]),
    base: base.express,
    entry: '@floodgate/express',
  },
  {
    name: '@floodgate/fastify',
    dir: project('fg-fastify', [FASTIFY, ...core, tar.fastify]),
    base: base.fastify,
    entry: '@floodgate/fastify',
  },
  {
    name: '@floodgate/koa',
    dir: project('fg-koa', [KOA, ...core, tar.koa]),
    base: base.koa,
    entry: '@floodgate/koa',
  },
  {
    name: '@floodgate/core',
    dir: project('fg-core', core),
    base: base.none,
    entry: '@floodgate/core',
  },
]
const blocks = project('blocks', BLOCKS)
const blockRows = [
  { name: 'zod', entry: 'zod', pkg: 'zod' },
  { name: 'zod/mini', entry: 'zod/mini', pkg: 'zod' },
  { name: 'valibot', entry: 'valibot', pkg: 'valibot' },
  { name: 'yaml', entry: 'yaml', pkg: 'yaml' },
]

/** Wall time of one fresh `node -e "import(entry)"`, from spawn to exit. */
function coldImport(cwd, entry) {
  const code = entry ? `import(${JSON.stringify(entry)})` : '0'
  const start = process.hrtime.bigint()
  const r = spawnSync(process.execPath, ['-e', code], { cwd, stdio: ['ignore', 'ignore', 'pipe'] })
  const elapsed = Number(process.hrtime.bigint() - start) / 1e6
  if (r.status !== 0) throw new Error(`import ${entry} failed in ${cwd}: ${r.stderr}`)
  return elapsed
}

// Interleaved rounds: a busy moment on the machine slows every contender, not one of them.
const timed = [
  { key: 'node', dir: base.none, entry: undefined },
  ...rows.map((r) => ({ key: r.name, dir: r.dir, entry: r.entry })),
  ...blockRows.map((b) => ({ key: `block:${b.name}`, dir: blocks, entry: b.entry })),
]
const samples = new Map(timed.map((t) => [t.key, []]))
console.error(`timing ${RUNS} cold imports of each…`)
for (let i = 0; i < RUNS; i++) {
  for (const t of timed) samples.get(t.key).push(coldImport(t.dir, t.entry))
}
const time = (key) => median(samples.get(key))
const node = time('node')

const peerSize =
  sizeOf(join(rows[0].dir, 'node_modules')).disk - sizeOf(join(rows[0].base, 'node_modules')).disk
const peerTime = time(PEER)
console.log(
  `Node ${process.version}; median of ${RUNS} fresh processes; a bare \`node -e 0\` took ${ms(node)}; load average ${loadavg()[0].toFixed(1)}.\n`,
)
console.log(
  '| installed | node_modules added (du) | apparent bytes added | cold import | import alone | vs express-rate-limit (size, time) |',
)
console.log('| --- | --- | --- | --- | --- | --- |')
for (const r of rows) {
  const after = sizeOf(join(r.dir, 'node_modules'))
  const before = sizeOf(join(r.base, 'node_modules'))
  const added = after.disk - before.disk
  const t = time(r.name)
  console.log(
    `| ${r.name} | ${mb(added)} | ${mb(after.bytes - before.bytes)} | ${ms(t)} | ${ms(t - node)} | ${(added / peerSize).toFixed(1)}x, ${(t / peerTime).toFixed(2)}x |`,
  )
}
console.log('\nBuilding blocks weighed for the rules schema, each installed alone:\n')
console.log('| import | package on disk (du) | cold import | import alone |')
console.log('| --- | --- | --- | --- |')
for (const b of blockRows) {
  const t = time(`block:${b.name}`)
  const size = sizeOf(join(blocks, 'node_modules', b.pkg)).disk
  console.log(`| ${b.name} | ${mb(size)} | ${ms(t)} | ${ms(t - node)} |`)
}
