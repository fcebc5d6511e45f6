// Heap bytes per key of one contender: insert N distinct keys, made on the fly so the store
// holds the only reference to each key string, as it would with real requests.
import { storeContenders } from './contenders.mjs'

const [name, n] = [process.argv[2], Number(process.argv[3])]
const c = storeContenders.find((x) => x.name === name)
const op = c.make(n)
const settle = async () => {
  for (let i = 0; i < 4; i++) {
    globalThis.gc()
    await new Promise((r) => setImmediate(r))
  }
}
await settle()
const before = process.memoryUsage().heapUsed
for (let i = 0; i < n; i++) {
  const r = op(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)
  if (!c.sync) await r
}
await settle()
const after = process.memoryUsage().heapUsed
console.log(String((after - before) / n))
process.exit(0)
