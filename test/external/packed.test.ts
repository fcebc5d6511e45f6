// The published packages as a consumer gets them: `pnpm pack` output (the built dist, never the
// sources), linted by publint and attw, installed from the tarballs into one throwaway project
// (dependencies and peers from the npm registry, @floodgate/* only from the tarballs), then
// loaded with import() and require() and compiled by tsc under node16 (ESM and CJS) and bundler.
import { existsSync } from 'node:fs'
import { copyFile, mkdir, readdir, readFile, realpath, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { publint } from 'publint'
import { formatMessage } from 'publint/utils'
import { describe, expect, inject, it } from 'vitest'
import { nodeBinary, otherNodeVersions } from './node-binaries.js'
import { type Manifest, packOf, publishedPackages, root } from './packs.js'
import { readmeSnippets, snippetModule } from './readme-snippets.js'
import { type Run, run, runOk } from './run.js'

const fixtures = fileURLToPath(new URL('./consumer/', import.meta.url))
const bin = (name: string): string => join(root, 'node_modules', '.bin', name)

/** One published package: its directory, manifest and entry points. */
interface Published {
  readonly name: string
  readonly dir: string
  readonly manifest: Manifest
  /** Import specifiers of its `exports` (`@floodgate/core`, `@floodgate/core/testing`). */
  readonly entries: readonly Entry[]
}

interface Entry {
  readonly specifier: string
  readonly subpath: string
  /** False for an entry published without a `require` condition (ESM only). */
  readonly requirable: boolean
}

const readJson = async <T>(path: string): Promise<T> =>
  JSON.parse(await readFile(path, 'utf8')) as T

/** The version the workspace installed (what the pnpm store already holds). */
async function installedVersion(fromDir: string, name: string, fallback: string): Promise<string> {
  const path = join(fromDir, 'node_modules', name, 'package.json')
  return existsSync(path) ? (await readJson<{ version: string }>(path)).version : fallback
}

function entriesOf(manifest: Manifest): Entry[] {
  return Object.entries(manifest.exports ?? { '.': manifest.main ?? '' })
    .filter(([subpath]) => subpath !== './package.json')
    .map(([subpath, target]) => ({
      specifier: manifest.name + subpath.slice(1),
      subpath,
      requirable: typeof target === 'string' || 'require' in target || 'default' in target,
    }))
}

// Found at collection time, so each package gets its own tests.
const published: readonly Published[] = publishedPackages.map(({ dir, manifest }) => ({
  name: manifest.name,
  dir,
  manifest,
  entries: entriesOf(manifest),
}))

const packs = inject('packs')
const temp = packs.temp
const tarballOf = (name: string): string => packOf(packs, name).filename

let installed: Promise<string> | undefined

/**
 * One consumer project for every package, installed once: the tarballs, plus each package's
 * peers (and their @types) at the versions the workspace uses, so the pnpm store serves them.
 * The overrides make the packages' own `@floodgate/core` dependency the packed core as well.
 */
function consumer(): Promise<string> {
  installed ??= (async () => {
    const dir = join(temp, 'consumer')
    await mkdir(dir)
    const fromTarballs = Object.fromEntries(
      published.map((p) => [p.name, `file:${tarballOf(p.name)}`]),
    )
    const dependencies: Record<string, string> = {
      ...fromTarballs,
      '@types/node': await installedVersion(root, '@types/node', '20'),
    }
    for (const { dir: pkgDir, manifest } of published) {
      for (const [peer, range] of Object.entries(manifest.peerDependencies ?? {})) {
        dependencies[peer] = await installedVersion(pkgDir, peer, range)
        const types = `@types/${peer}`
        const typesRange = manifest.devDependencies?.[types]
        if (typesRange !== undefined) {
          dependencies[types] = await installedVersion(pkgDir, types, typesRange)
        }
      }
    }
    const rootManifest = await readJson<Manifest>(join(root, 'package.json'))
    await writeFile(
      join(dir, 'package.json'),
      JSON.stringify({
        name: 'floodgate-consumer',
        private: true,
        packageManager: rootManifest.packageManager,
        dependencies,
        pnpm: { overrides: fromTarballs },
      }),
    )
    for (const file of await readdir(fixtures))
      await copyFile(join(fixtures, file), join(dir, file))
    // The same TypeScript consumer as an ES module, a CommonJS module and a bundler module.
    for (const [from, copies] of [
      ['types.ts', ['types.mts', 'types.cts']],
      ['testing.ts', ['testing.mts']],
    ] as const) {
      for (const to of copies) await copyFile(join(dir, from), join(dir, to))
    }
    // The READMEs' TypeScript blocks, each a module of its own, compiled as written, in the
    // node16 program (one tsc run fewer).
    const snippets = readmeSnippets()
    const readmeFiles = snippets.map((_, i) => `readme-${i + 1}.mts`)
    for (const [i, snippet] of snippets.entries()) {
      await writeFile(join(dir, readmeFiles[i]!), snippetModule(snippet))
    }
    const compilerOptions = { target: 'es2022', strict: true, noEmit: true, types: ['node'] }
    await writeFile(
      join(dir, 'tsconfig.node16.json'),
      JSON.stringify({
        // skipLibCheck: checking every dependency's declarations too takes ~4x as long.
        compilerOptions: { ...compilerOptions, module: 'node16', moduleResolution: 'node16' },
        files: ['types.mts', 'types.cts', 'testing.mts', ...readmeFiles],
      }),
    )
    await writeFile(
      join(dir, 'tsconfig.bundler.json'),
      JSON.stringify({
        compilerOptions: { ...compilerOptions, module: 'esnext', moduleResolution: 'bundler' },
        files: ['types.ts', 'testing.ts'],
      }),
    )
    // No lockfile to freeze (CI=true would demand one); scripts are not needed to import.
    await runOk(
      'pnpm',
      ['install', '--prefer-offline', '--ignore-scripts', '--no-frozen-lockfile'],
      dir,
    )
    return dir
  })()
  return installed
}

type LoadResults = Record<string, { code?: string; message: string } | null>
const loads = new Map<string, Promise<LoadResults>>()

/**
 * Loads every entry point through `runner` (import.mjs or require.cjs) in one process of
 * `version` of Node.js (by default the one running the tests).
 */
function load(runner: 'import.mjs' | 'require.cjs', version?: string): Promise<LoadResults> {
  const key = `${runner} ${version ?? 'current'}`
  let results = loads.get(key)
  if (results === undefined) {
    const specifiers = published.flatMap((p) => p.entries.map((e) => e.specifier))
    const node = version === undefined ? Promise.resolve(process.execPath) : nodeBinary(version)
    results = Promise.all([consumer(), node])
      .then(([dir, binary]) => runOk(binary, [runner, ...specifiers], dir))
      .then((out) => JSON.parse(out) as LoadResults)
    loads.set(key, results)
  }
  return results
}

const tscRuns = new Map<string, Promise<Run>>()
function tsc(config: 'node16' | 'bundler'): Promise<Run> {
  let result = tscRuns.get(config)
  if (result === undefined) {
    result = consumer().then((dir) =>
      run(
        process.execPath,
        [join(root, 'node_modules/typescript/bin/tsc'), '-p', `tsconfig.${config}.json`],
        dir,
      ),
    )
    tscRuns.set(config, result)
  }
  return result
}

describe.concurrent.each(published)('$name, packed', ({ name, manifest, entries }) => {
  it('packs something under every path its `files` field names', () => {
    const { files } = packOf(packs, name)
    // Plain paths only: `!` entries exclude, globs may rightly match nothing today.
    for (const path of (manifest.files ?? []).filter((f) => !/[!*?]/.test(f))) {
      expect(
        files.some((f) => f === path || f.startsWith(`${path}/`)),
        path,
      ).toBe(true)
    }
  })

  it('publint reports nothing, suggestions included', async () => {
    const buf = await readFile(tarballOf(name))
    const tarball = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength)
    const { messages, pkg } = await publint({ pack: { tarball }, strict: true })
    expect(messages.map((m) => formatMessage(m, pkg, { color: false }))).toEqual([])
  })

  it('attw finds no problem under node10, node16 (CJS and ESM) and bundler', async () => {
    const attw = (args: string[]): Promise<Run> =>
      run(
        bin('attw'),
        [tarballOf(name), '--no-definitely-typed', '--format', 'ascii', ...args],
        temp,
      )
    const esmOnly = entries.filter((e) => !e.requirable).map((e) => e.subpath)
    const all = await attw(esmOnly.length > 0 ? ['--exclude-entrypoints', ...esmOnly] : [])
    expect(all.code, all.output).toBe(0)
    if (esmOnly.length > 0) {
      // Entries published for `import` only (core's ./testing imports vitest, which cannot be
      // required): that node10 and node16-from-CJS do not resolve them is the intent.
      const esm = await attw(['--entrypoints', ...esmOnly, '--profile', 'esm-only'])
      expect(esm.code, esm.output).toBe(0)
    }
  })

  // The commands a global or npx install puts on the PATH; every one answers --help.
  for (const command of Object.keys(manifest.bin ?? {})) {
    it(`its bin ${command} runs (--help)`, async () => {
      const result = await run(
        join(await consumer(), 'node_modules', '.bin', command),
        ['--help'],
        temp,
      )
      expect(result.code, result.output).toBe(0)
      expect(result.output).toMatch(/usage/i)
    })
  }

  for (const { specifier, requirable } of entries) {
    it(`${specifier} loads with import() and works`, async () => {
      expect((await load('import.mjs'))[specifier]).toBeNull()
    })
    if (requirable) {
      it(`${specifier} loads with require() and works`, async () => {
        expect((await load('require.cjs'))[specifier]).toBeNull()
      })
    } else {
      it(`${specifier} is ESM only: require() is refused`, async () => {
        expect((await load('require.cjs'))[specifier]?.code).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED')
      })
    }
  }
})

describe.concurrent('consumers of the packed packages', () => {
  it('every package depends on the packed core, one instance of it', async () => {
    const dir = await consumer()
    const core = await realpath(join(dir, 'node_modules/@floodgate/core'))
    for (const { name, manifest } of published) {
      if (manifest.dependencies?.['@floodgate/core'] === undefined) continue
      const from = createRequire(await realpath(join(dir, 'node_modules', name, 'package.json')))
      expect(dirname(await realpath(from.resolve('@floodgate/core/package.json'))), name).toBe(core)
    }
  })

  it('types.ts imports every package', async () => {
    const source = await readFile(join(fixtures, 'types.ts'), 'utf8')
    for (const { name } of published) expect(source).toContain(`from '${name}'`)
  })

  it('compile under module node16, as ESM (.mts) and as CJS (.cts)', async () => {
    const result = await tsc('node16')
    expect(result.output).toBe('')
    expect(result.code).toBe(0)
  })

  it('compile under moduleResolution bundler', async () => {
    const result = await tsc('bundler')
    expect(result.output).toBe('')
    expect(result.code).toBe(0)
  })
})

describe.concurrent('the READMEs', () => {
  it('have TypeScript blocks, every one compiled by the next test', () => {
    expect(readmeSnippets().length).toBeGreaterThan(10)
  })

  it('TypeScript blocks compile against the packed packages (strict, module node16)', async () => {
    const result = await tsc('node16')
    // readme-<n>.mts starts with the README line of its block: `// README.md:63`.
    expect(result.output.split('\n').filter((l) => l.startsWith('readme-'))).toEqual([])
  })
})

// The README promises Node 20, 22 and 24: the same import()/require() checks, run by the
// official binaries of the other majors.
describe.concurrent.each(otherNodeVersions)('under Node %s', (version) => {
  const specifiers = published.flatMap((p) => p.entries)

  it('every entry point loads with import() and works', async () => {
    expect(await load('import.mjs', version)).toEqual(
      Object.fromEntries(specifiers.map((e) => [e.specifier, null])),
    )
  })

  it('every CJS entry point loads with require() and works; ESM-only ones are refused', async () => {
    const results = await load('require.cjs', version)
    for (const { specifier, requirable } of specifiers) {
      if (requirable) expect(results[specifier], specifier).toBeNull()
      else expect(results[specifier]?.code, specifier).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED')
    }
  })
})
