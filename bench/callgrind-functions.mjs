// Self instructions per function from a callgrind output file, with V8's JIT code named.
//
// Callgrind names machine code it has no symbols for by address. Node started with
// --perf-basic-prof writes /tmp/perf-<pid>.map (start, size, name of every code object V8
// creates), so those addresses can be named after the JavaScript function ("JS:*fillEntries
// file:///…:1163:21"; `*` optimised, `^` baseline, `~` interpreted). The output must have been
// written with --dump-instr=yes, so that every cost line carries its instruction address.
//
// V8 reuses the memory of collected code, so an address can appear twice in the map; the
// later entry wins, which is the code that ran last. A figure that moves between processes by a
// few hundred instructions per request is within that noise and the JIT's own.
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** [start, end, name] of each code object in the perf map of `pid`, sorted by start. */
function perfMap(pid) {
  const file = `/tmp/perf-${pid}.map`
  if (!existsSync(file)) return []
  const rows = []
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line)
    if (m) rows.push([parseInt(m[1], 16), parseInt(m[1], 16) + parseInt(m[2], 16), m[3]])
  }
  // Stable sort: for one start address the later (newer) entry comes last and wins below.
  return rows.sort((a, b) => a[0] - b[0])
}

function nameAt(map, addr) {
  let lo = 0
  let hi = map.length - 1
  let found = -1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    if (map[mid][0] <= addr) {
      found = mid
      lo = mid + 1
    } else hi = mid - 1
  }
  return found >= 0 && addr < map[found][1] ? map[found][2] : 'JIT code (unnamed)'
}

/**
 * Walk the cost lines of a callgrind output file written with --dump-instr=yes: `visit(fn,
 * callee, cost)` for each, `fn` the function the line belongs to (JIT code named through the
 * perf map), `callee` the function called when the line is a call's inclusive cost, else
 * undefined (the function's own cost).
 */
function walk(file, visit) {
  const text = readFileSync(file, 'utf8')
  const pid = /^pid: (\d+)$/m.exec(text)?.[1]
  const map = pid ? perfMap(pid) : []
  const positions = /^positions: (.*)$/m.exec(text)?.[1].split(' ') ?? ['line']
  if (positions[0] !== 'instr') throw new Error(`${file}: written without --dump-instr=yes`)
  const costColumn = positions.length
  const names = new Map()
  let fn = ''
  let callee = ''
  let last = 0
  let inCall = false
  const named = (line, prefix) => {
    const m = /^\((\d+)\)(?: (.*))?$/.exec(line.slice(prefix.length))
    if (m[2] !== undefined) names.set(m[1], m[2])
    return names.get(m[1])
  }
  for (const line of text.split('\n')) {
    if (line.startsWith('fn=')) fn = named(line, 'fn=')
    else if (line.startsWith('cfn=')) callee = named(line, 'cfn=')
    else if (line.startsWith('calls=')) inCall = true
    else if (/^[0-9+*-]/.test(line)) {
      const parts = line.split(' ')
      const a = parts[0]
      const addr = a.startsWith('0x')
        ? parseInt(a, 16)
        : a[0] === '+'
          ? last + Number(a.slice(1))
          : a[0] === '-'
            ? last - Number(a.slice(1))
            : a === '*'
              ? last
              : Number(a)
      last = addr
      const cost = Number(parts[costColumn] ?? 0)
      const name = fn.startsWith('0x') ? nameAt(map, addr) : fn
      // The line after calls= is the call's inclusive cost, not the caller's own.
      visit(name, inCall ? callee : undefined, cost)
      inCall = false
    }
  }
}

/**
 * Self cost of every function in a callgrind output file.
 *
 * @param file - a callgrind output file written with --dump-instr=yes
 * @returns a Map of function name to instructions (the file's first event)
 */
export function selfCosts(file) {
  const costs = new Map()
  walk(file, (fn, callee, cost) => {
    if (callee === undefined) costs.set(fn, (costs.get(fn) ?? 0) + cost)
  })
  return costs
}

/**
 * Self plus the inclusive cost of every call made, per function: recursion counts twice, so
 * read these as "where the time goes under", not as a partition.
 *
 * @param file - a callgrind output file written with --dump-instr=yes
 * @returns a Map of function name to instructions
 */
export function inclusiveCosts(file) {
  const costs = new Map()
  walk(file, (fn, _callee, cost) => costs.set(fn, (costs.get(fn) ?? 0) + cost))
  return costs
}

/**
 * Inclusive cost of every caller -> callee edge: who pays for an expensive builtin or runtime
 * function (how ioredis's `args.flat()` and a `split` per batch were found).
 *
 * @param file - a callgrind output file written with --dump-instr=yes
 * @returns a Map of `caller -> callee` to instructions
 */
export function callCosts(file) {
  const costs = new Map()
  walk(file, (fn, callee, cost) => {
    if (callee === undefined) return
    const edge = `${fn} -> ${callee}`
    costs.set(edge, (costs.get(edge) ?? 0) + cost)
  })
  return costs
}

// node bench/callgrind-functions.mjs <file> <divisor> [callee-regex] [caller-regex] [top]:
// the heaviest call edges per operation (a kept file of bench/redis/node-instructions.mjs or
// bench/http/instructions.mjs, with the number of decisions or responses counted).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file, divisor, calleeRe = '.', callerRe = '.', top = '30'] = process.argv.slice(2)
  const callee = new RegExp(calleeRe)
  const caller = new RegExp(callerRe)
  const rows = [...callCosts(file)]
    .filter(([edge]) => {
      const [from, to] = edge.split(' -> ')
      return callee.test(to) && caller.test(from)
    })
    .sort((x, y) => y[1] - x[1])
    .slice(0, Number(top))
  for (const [edge, cost] of rows) {
    console.log(`${String(Math.round(cost / Number(divisor))).padStart(8)}  ${edge}`)
  }
}
