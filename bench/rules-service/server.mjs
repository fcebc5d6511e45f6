// One rules service for bench/rules-service/run.mjs, in its own process (so it has a core to
// itself, as far as the machine allows): `node server.mjs <storage>` where storage is `pglite`,
// `pglite-uncached` (PGlite with the revision cache bypassed, as before the cache) or `postgres`
// (DATABASE_URL, in a schema of its own, dropped at exit). It creates the service `checkout` with
// one rule, then reports its port and answers `cpu` with its CPU time in microseconds.
import pg from 'pg'
import { createRulesService, openPgliteDb } from '@floodgate/rules-service'

const storage = process.argv[2] ?? 'pglite'
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const schema = `fg_bench_${process.pid}`
const token = 'bench-admin-token-0123456789'

let db
if (storage === 'pglite') db = await openPgliteDb()
// The same database with a handle the cache does not know (kind is what keys the cache), so
// every poll runs its query, as every poll did before the cache.
else if (storage === 'pglite-uncached') db = { ...(await openPgliteDb()), kind: 'postgres' }
const app = await createRulesService({
  ...(db ? { db } : { databaseUrl: DATABASE_URL, schema }),
  services: ['checkout'],
  tokens: [{ name: 'bench', role: 'admin', token }],
})
const created = await app.inject({
  method: 'POST',
  url: '/v1/services/checkout/rules',
  headers: { authorization: `Bearer ${token}` },
  payload: { id: 'per-user', match: '/api/**', key: 'ip', rate: '100/1m' },
})
if (created.statusCode !== 201) throw new Error(`creating the rule: ${created.body}`)
await app.listen({ port: 0, host: '127.0.0.1' })

async function stop() {
  await app.close()
  await db?.close()
  if (!db) {
    const client = new pg.Client({ connectionString: DATABASE_URL })
    await client.connect()
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await client.end()
  }
  process.exit(0)
}
process.on('message', (m) => {
  if (m === 'cpu') {
    const { user, system } = process.cpuUsage()
    process.send({ cpuUs: user + system })
  } else if (m === 'stop') void stop()
})
process.send({ port: app.server.address().port })
