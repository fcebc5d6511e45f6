// Heap bytes per key of one contender: insert N distinct keys, made on the fly so the store
// holds the only reference to each key string, as it would with real requests.
import { storeContenders } from './contenders.mjs'

const [name, n] = [process.argv[2], Number(process.argv[3])]
const c = storeContenders.find((x) => x.name === name)
// Keys are made on the fly below; the op reads them from this one-slot array.
const slot = ['']
const op = c.make(slot, n)
// Keep the store reachable until the end: V8 may collect a local the code no longer reads.
globalThis.keepAlive = op
const settle = async () => {
  for (let i = 0; i < 4; i++) {
    globalThis.gc()
    await new Promise((r) => setImmediate(r))
  }
}
await settle()
// Typed-array slabs live outside the JS heap: count them too.
const used = () => {
  const m = process.memoryUsage()
  return m.heapUsed + m.arrayBuffers
}
const before = used()
for (let i = 0; i < n; i++) {
  slot[0] = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`
  const r = op(0)
  if (!c.sync) await r
}
await settle()
const after = used()
console.log(String((after - before) / n))
process.exit(0)
