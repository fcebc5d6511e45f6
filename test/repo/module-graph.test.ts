import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../../', import.meta.url))

/** The non-test source files of a package. */
function sources(pkg: string): string[] {
  const src = join(root, 'packages', pkg, 'src')
  return readdirSync(src, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !/\.test(-d)?\.ts$/.test(f))
    .map((f) => join(src, f))
}

/** Each file's relative imports (type-only ones too: a circle of types is still a circle). */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files)
  const graph = new Map<string, string[]>()
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true)
    graph.set(
      file,
      importedFiles
        .map((i) => i.fileName)
        .filter((name) => name.startsWith('.'))
        .map((name) => resolve(dirname(file), name.replace(/\.js$/, '.ts')))
        .filter((target) => known.has(target)),
    )
  }
  return graph
}

/** Every import circle, each as the files around it (depth-first search, one per back edge). */
function circles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const visit = (file: string): void => {
    state.set(file, 'open')
    path.push(file)
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push(path.slice(path.indexOf(next)))
      else if (!state.has(next)) visit(next)
    }
    path.pop()
    state.set(file, 'done')
  }
  for (const file of graph.keys()) if (!state.has(file)) visit(file)
  return found
}

const packages = readdirSync(join(root, 'packages'))

describe('the module graph of each package', () => {
  it.each(packages)('%s has no import circles', (pkg) => {
    const graph = importGraph(sources(pkg))
    expect(graph.size).toBeGreaterThan(0)
    const named = circles(graph).map((c) => c.map((f) => relative(root, f)).join(' -> '))
    expect(named).toEqual([])
  })

  it('finds a circle when there is one (the check itself works)', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', []],
    ])
    expect(circles(graph)).toEqual([['a', 'b', 'c']])
  })
})

/** The imports in `graph` of a file outside `allowed` folders into `folder`, as `from -> to`. */
function importsInto(
  graph: Map<string, string[]>,
  src: string,
  folder: string,
  allowed: readonly string[],
): string[] {
  const top = (file: string): string => relative(src, file).split('/')[0]!
  return [...graph]
    .filter(([from]) => !allowed.includes(top(from)))
    .flatMap(([from, targets]) =>
      targets
        .filter((to) => top(to) === folder)
        .map((to) => `${relative(src, from)} -> ${relative(src, to)}`),
    )
}

// Core's layers: the limiter below, the adapter toolkit (http/) on it, the shared suites
// (testing/) on both. A module of a lower layer importing a higher one would tie the limiter to
// HTTP or to the test suites.
describe("core's layers", () => {
  const src = join(root, 'packages', 'core', 'src')
  const graph = importGraph(sources('core'))

  it.each([
    ['http', ['http', 'testing']],
    ['testing', ['testing']],
  ])('%s/ is imported only from %j', (folder, allowed) => {
    expect(importsInto(graph, src, folder, allowed)).toEqual([])
  })

  it('finds an import into a higher layer when there is one (the check itself works)', () => {
    const fake = new Map([
      [join(src, 'limiter.ts'), [join(src, 'http', 'headers.ts')]],
      [join(src, 'http', 'headers.ts'), [join(src, 'decision.ts')]],
    ])
    expect(importsInto(fake, src, 'http', ['http', 'testing'])).toEqual([
      'limiter.ts -> http/headers.ts',
    ])
  })
})
