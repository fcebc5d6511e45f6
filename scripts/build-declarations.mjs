// Type declarations of the packages: `x.d.ts` from every module of a package's src (its
// `tsconfig.dts.json`) and a CommonJS twin `x.d.cts` for its `require` exports.
//
//   node scripts/build-declarations.mjs              every package under packages/
//   node scripts/build-declarations.mjs <dir>...     those packages (`.` from a package's folder)
//
// The sources are written for `isolatedDeclarations` (tsconfig.dts.json): every exported
// declaration states its type, so each file's declarations come from that file alone
// (`ts.transpileDeclaration`), without a program, TypeScript's lib or any import. A missing
// annotation fails the build with the file and line; `pnpm typecheck` checks the types.
//
// The twins: each package is `"type": "module"`, so TypeScript reads `x.d.ts` as ESM, while a
// `require` consumer needs declarations it reads as CommonJS, whose relative imports name the
// twins (`./y.cjs`, which resolves to `./y.d.cts`) so they stay CommonJS too.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
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
  const { options } = config
  removeDeclarations(options.outDir)
  const errors = [...config.errors]
  for (const fileName of config.fileNames) {
    const { outputText, diagnostics } = ts.transpileDeclaration(readFileSync(fileName, 'utf8'), {
      compilerOptions: options,
      fileName,
      reportDiagnostics: true,
    })
    errors.push(...(diagnostics ?? []))
    const out = join(options.outDir, relative(options.rootDir, fileName)).replace(/\.ts$/, '.d.ts')
    writeFile(out, outputText)
  }
  if (errors.length > 0) {
    failed = true
    console.error(ts.formatDiagnostics(errors, format))
  }
}
if (failed) process.exit(1)
