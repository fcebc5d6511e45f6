import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// Every package's source must be a graph without cycles, type-only imports included: a cycle
// means two modules that can only be understood together.

const packagesDir = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s+'(\.{1,2}\/[^']+)'/g

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name)
    if (e.isDirectory()) return sources(path)
    return e.name.endsWith('.ts') && !/\.test(-d|-util)?\.ts$/.test(e.name) ? [path] : []
  })
}

function graph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files)
  return new Map(
    files.map((file) => {
      const text = readFileSync(file, 'utf8')
      const targets = [...text.matchAll(IMPORT)]
        .map((m) => resolve(dirname(file), m[1]!.replace(/\.js$/, '.ts')))
        .filter((target) => known.has(target))
      return [file, targets]
    }),
  )
}

/** One cycle per strongly connected component with more than one module (or a self-import). */
function cycles(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const visit = (v: string): void => {
    index.set(v, index.size)
    low.set(v, index.get(v)!)
    stack.push(v)
    onStack.add(v)
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1 || (edges.get(v) ?? []).includes(v)) found.push(component.sort())
    }
  }
  for (const v of edges.keys()) if (!index.has(v)) visit(v)
  return found
}

describe('import graph', () => {
  it('finds a cycle when there is one (the check itself)', () => {
    const edges = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ])
    expect(cycles(edges)).toEqual([['a', 'b', 'c']])
  })

  const packages = readdirSync(packagesDir, { withFileTypes: true }).filter((e) => e.isDirectory())
  for (const pkg of packages) {
    it(`@floodgate/${pkg.name}'s source has no import cycle`, () => {
      const files = sources(join(packagesDir, pkg.name, 'src'))
      expect(files.length).toBeGreaterThan(0)
      const found = cycles(graph(files)).map((c) => c.map((f) => relative(packagesDir, f)))
      expect(found).toEqual([])
    })
  }
})
