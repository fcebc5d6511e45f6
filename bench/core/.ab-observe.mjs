// A/B: check() on main's core vs this branch's core (no observer), and with the Prometheus
// exporter attached; one hot key allowed, and one refused client (the topClients path).
const [main, branch] = await Promise.all([
  import('/work/main/packages/core/dist/index.js'),
  import('/work/wt/metrics/packages/core/dist/index.js'),
])
const { prometheusMetrics } = await import('/work/wt/metrics/packages/metrics/dist/prometheus.js')
const { Registry } = await import('/work/wt/metrics/packages/metrics/node_modules/prom-client/index.js')
const facts = { method: 'GET', path: '/items', ip: '203.0.113.7', headers: {} }
function asyncStore(core) {
  const memory = new core.MemoryStore()
  return {
    consume: (e, now) => Promise.resolve(memory.consume(e, now).map((r) => ({ ...r }))),
    refund: (e, now) => memory.refund(e, now),
  }
}
function make(core, { exporter = false, limit = 1e12, async = false } = {}) {
  const store = async ? asyncStore(core) : undefined
  const l = core.createLimiter({ rules: [{ id: 'per-ip', limit, window: '1h' }], ...(store && { store }) })
  if (exporter) prometheusMetrics(l, { registry: new Registry() })
  return l
}
const variants = {
  'main, allowed': make(main),
  'branch, allowed': make(branch),
  'branch + prometheus, allowed': make(branch, { exporter: true }),
  'main, refused': make(main, { limit: 1 }),
  'branch, refused (topClients)': make(branch, { limit: 1 }),
  'main, async store': make(main, { async: true }),
  'branch + prometheus, async store': make(branch, { async: true, exporter: true }),
}
const N = 300_000
const results = Object.fromEntries(Object.keys(variants).map((k) => [k, []]))
for (let round = 0; round < 7; round++) {
  for (const [name, l] of Object.entries(variants)) {
    const t0 = process.hrtime.bigint()
    if (name.includes('async')) for (let i = 0; i < N / 10; i++) await l.check(facts)
    else for (let i = 0; i < N; i++) l.check(facts)
    const ns = Number(process.hrtime.bigint() - t0)
    results[name].push(((name.includes('async') ? N / 10 : N) / ns) * 1e3)
    await new Promise((r) => setImmediate(r))
  }
}
for (const [name, xs] of Object.entries(results)) {
  xs.sort((a, b) => a - b)
  console.log(`| ${name} | ${xs[3].toFixed(2)} M/s | ${xs[0].toFixed(2)}–${xs[6].toFixed(2)} |`)
}
