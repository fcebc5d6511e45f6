// Writes a CommonJS twin `x.d.cts` of every `x.d.ts` in a package's dist, for its `require`
// exports. The package is `"type": "module"`, so TypeScript reads `x.d.ts` as ESM; a `require`
// consumer needs declarations TypeScript reads as CommonJS, and their relative imports must
// name the twins (`./y.cjs`, which resolves to `./y.d.cts`) so they stay CommonJS too.
// Run from the package's directory, after `tsc -p tsconfig.dts.json`.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const dist = process.argv[2] ?? 'dist'
// A relative specifier ending in `.js`, in `from '…'`, `import('…')` or `import '…'`.
const relativeJs = /(\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]*)\.js\2/g

let written = 0
for (const name of readdirSync(dist, { recursive: true, encoding: 'utf8' })) {
  if (!name.endsWith('.d.ts')) continue
  const file = join(dist, name)
  const source = readFileSync(file, 'utf8')
  writeFileSync(file.replace(/\.d\.ts$/, '.d.cts'), source.replace(relativeJs, '$1$2$3.cjs$2'))
  written++
}
if (written === 0) throw new Error(`${dist} has no .d.ts files: run tsc -p tsconfig.dts.json first`)
