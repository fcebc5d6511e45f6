// Type declarations of the packages, in one process: `x.d.ts` from every module of a package's
// src (its `tsconfig.dts.json`) and a CommonJS twin `x.d.cts` for its `require` exports.
//
//   node scripts/build-declarations.mjs              every package under packages/
//   node scripts/build-declarations.mjs <dir>...     those packages (`.` from a package's folder)
//
// One process for all packages, because parsing TypeScript's lib and the @types every package
// shares is most of the work: the parsed files are kept and reused by the next package.
// `noCheck` (tsconfig.dts.json): the build only emits; `pnpm typecheck` checks the types.
//
// The twins: each package is `"type": "module"`, so TypeScript reads `x.d.ts` as ESM, while a
// `require` consumer needs declarations it reads as CommonJS, whose relative imports name the
// twins (`./y.cjs`, which resolves to `./y.d.cts`) so they stay CommonJS too.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const root = fileURLToPath(new URL('../', import.meta.url))

/** Package directories, each after the workspace packages it depends on. */
function packageDirs(args) {
  const dirs = (
    args.length > 0
      ? args.map((dir) => resolve(dir))
      : readdirSync(join(root, 'packages')).map((name) => join(root, 'packages', name))
  ).filter((dir) => existsSync(join(dir, 'tsconfig.dts.json')))
  const manifests = new Map(
    dirs.map((dir) => [dir, JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))]),
  )
  const byName = new Map([...manifests].map(([dir, manifest]) => [manifest.name, dir]))
  const ordered = []
  const visit = (dir) => {
    if (ordered.includes(dir)) return
    const deps = Object.keys(manifests.get(dir).dependencies ?? {})
    for (const dep of deps) if (byName.has(dep)) visit(byName.get(dep))
    ordered.push(dir)
  }
  dirs.forEach(visit)
  return ordered
}

// A relative specifier ending in `.js`, in `from '…'`, `import('…')` or `import '…'`.
const relativeJs = /(\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]*)\.js\2/g

/** Source files that never change during a build (TypeScript's lib, installed packages). */
const shared = new Map()
const isShared = (fileName) => fileName.includes('/node_modules/')

function writeFile(fileName, text) {
  mkdirSync(dirname(fileName), { recursive: true })
  writeFileSync(fileName, text)
  if (fileName.endsWith('.d.ts'))
    writeFileSync(fileName.replace(/\.d\.ts$/, '.d.cts'), text.replace(relativeJs, '$1$2$3.cjs$2'))
}

const format = {
  getCanonicalFileName: (f) => f,
  getCurrentDirectory: () => root,
  getNewLine: () => '\n',
}

/** Remove the declarations of an earlier build (the bundler leaves them: see tsup.config.ts). */
function removeDeclarations(dist) {
  if (!existsSync(dist)) return
  for (const name of readdirSync(dist, { recursive: true, encoding: 'utf8' }))
    if (/\.d\.c?ts$/.test(name)) rmSync(join(dist, name))
}

let failed = false
for (const dir of packageDirs(process.argv.slice(2))) {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(dir, 'tsconfig.dts.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.formatDiagnostic(d, format))
      },
    },
  )
  removeDeclarations(config.options.outDir)
  const host = ts.createCompilerHost(config.options)
  const getSourceFile = host.getSourceFile.bind(host)
  host.getSourceFile = (fileName, version, ...rest) => {
    if (!isShared(fileName)) return getSourceFile(fileName, version, ...rest)
    const key = `${fileName}\0${JSON.stringify(version)}`
    if (!shared.has(key)) shared.set(key, getSourceFile(fileName, version, ...rest))
    return shared.get(key)
  }
  const program = ts.createProgram({
    rootNames: config.fileNames,
    options: config.options,
    projectReferences: config.projectReferences,
    host,
  })
  const { diagnostics } = program.emit(undefined, writeFile, undefined, true)
  const errors = [...config.errors, ...program.getOptionsDiagnostics(), ...diagnostics]
  if (errors.length > 0) {
    failed = true
    console.error(ts.formatDiagnostics(errors, format))
  }
}
if (failed) process.exit(1)
