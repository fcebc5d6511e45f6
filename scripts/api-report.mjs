// The public API of every published package, one Markdown report per package in api/: for
// each entry point of its `exports`, every exported name with its declaration (bodies and
// comments left out). A change to what a package exports shows up as a diff of api/ in review.
//
//   node scripts/api-report.mjs           write api/*.api.md
//   node scripts/api-report.mjs --check   exit 1 and name the reports that differ
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const root = fileURLToPath(new URL('../', import.meta.url))
const apiDir = join(root, 'api')

/** Published packages and, for each, its entry points: subpath → source file. */
function publishedEntries() {
  const out = []
  for (const dir of readdirSync(join(root, 'packages')).sort()) {
    const manifestPath = join(root, 'packages', dir, 'package.json')
    if (!existsSync(manifestPath)) continue
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'))
    if (manifest.private) continue
    const entries = []
    for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
      const js = JSON.stringify(target).match(/\.\/dist\/([^"]+)\.js"/)
      if (!js) continue
      entries.push({ subpath, file: join(root, 'packages', dir, 'src', `${js[1]}.ts`) })
    }
    out.push({ name: manifest.name, dir, entries })
  }
  return out
}

const printer = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed })
const flags =
  ts.TypeFormatFlags.NoTruncation |
  ts.TypeFormatFlags.UseSingleQuotesForStringLiteralType |
  ts.TypeFormatFlags.WriteArrayAsGenericType

const isPublicMember = (member) =>
  !ts.isPrivateIdentifier(member.name ?? ts.factory.createIdentifier('x')) &&
  !(ts.getCombinedModifierFlags(member) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected))

/** A parameter as a declaration shows it: no default value, optional when it had one. */
function declaredParameter(p, dropModifiers = false) {
  const f = ts.factory
  const modifiers = dropModifiers
    ? p.modifiers?.filter(
        (x) => x.kind !== ts.SyntaxKind.PrivateKeyword && x.kind !== ts.SyntaxKind.ReadonlyKeyword,
      )
    : p.modifiers
  const optional =
    p.questionToken ?? (p.initializer ? f.createToken(ts.SyntaxKind.QuestionToken) : undefined)
  return f.updateParameterDeclaration(
    p,
    modifiers,
    p.dotDotDotToken,
    p.name,
    optional,
    p.type,
    undefined,
  )
}

/** The written type of a member, or the checker's when it has none. */
function typeNode(node, checker) {
  return (
    node.type ??
    ts.factory.createTypeReferenceNode(
      checker.typeToString(checker.getTypeAtLocation(node), undefined, flags),
    )
  )
}

/** A declaration as it reads in a `.d.ts`: no bodies, no initialisers, no private members. */
function shape(decl, checker) {
  const f = ts.factory
  if (ts.isFunctionDeclaration(decl))
    return f.updateFunctionDeclaration(
      decl,
      decl.modifiers?.filter((m) => m.kind !== ts.SyntaxKind.AsyncKeyword),
      decl.asteriskToken,
      decl.name,
      decl.typeParameters,
      decl.parameters.map((p) => declaredParameter(p)),
      decl.type,
      undefined,
    )
  if (!ts.isClassDeclaration(decl)) return decl
  const members = decl.members.filter(isPublicMember).map((m) => {
    if (ts.isMethodDeclaration(m))
      return f.updateMethodDeclaration(
        m,
        m.modifiers,
        m.asteriskToken,
        m.name,
        m.questionToken,
        m.typeParameters,
        m.parameters.map((p) => declaredParameter(p)),
        m.type,
        undefined,
      )
    if (ts.isConstructorDeclaration(m))
      return f.updateConstructorDeclaration(
        m,
        m.modifiers,
        m.parameters.map((p) => declaredParameter(p, true)),
        undefined,
      )
    if (ts.isPropertyDeclaration(m))
      return f.updatePropertyDeclaration(
        m,
        m.modifiers,
        m.name,
        m.questionToken,
        typeNode(m, checker),
        undefined,
      )
    if (ts.isGetAccessorDeclaration(m))
      return f.updateGetAccessorDeclaration(
        m,
        m.modifiers,
        m.name,
        m.parameters,
        typeNode(m, checker),
        undefined,
      )
    if (ts.isSetAccessorDeclaration(m))
      return f.updateSetAccessorDeclaration(m, m.modifiers, m.name, m.parameters, undefined)
    return m
  })
  return f.updateClassDeclaration(
    decl,
    decl.modifiers,
    decl.name,
    decl.typeParameters,
    decl.heritageClauses,
    members,
  )
}

/** The report line(s) for one exported symbol. */
function describe(symbol, checker) {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
  const parts = []
  for (const decl of target.declarations ?? []) {
    const sf = decl.getSourceFile()
    if (ts.isVariableDeclaration(decl)) {
      const type = checker.typeToString(
        checker.getTypeOfSymbolAtLocation(target, decl),
        undefined,
        flags,
      )
      parts.push(`const ${target.name}: ${type}`)
    } else if (ts.isExportAssignment(decl)) {
      parts.push(
        `default: ${checker.typeToString(checker.getTypeAtLocation(decl.expression), undefined, flags)}`,
      )
    } else {
      parts.push(
        printer
          .printNode(ts.EmitHint.Unspecified, shape(decl, checker), sf)
          .replace(/^export (default )?/, ''),
      )
    }
  }
  return parts.join('\n')
}

/** One program over every entry point: the packages share most of what it parses. */
function createProgram(packages) {
  return ts.createProgram(
    packages.flatMap((pkg) => pkg.entries.map((e) => e.file)),
    {
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: ['node'],
      allowImportingTsExtensions: true,
      baseUrl: root,
      paths: JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8')).compilerOptions.paths,
    },
  )
}

/** The Markdown report of one package. */
function report(pkg, program) {
  const checker = program.getTypeChecker()
  let text = `# ${pkg.name}: public API\n\nGenerated by \`node scripts/api-report.mjs\`; checked by \`test/repo/api-report.test.ts\`. Do not edit by hand.\n`
  for (const entry of pkg.entries) {
    const sf = program.getSourceFile(entry.file)
    if (!sf) throw new Error(`${pkg.name}: entry ${entry.subpath} has no source ${entry.file}`)
    const module = checker.getSymbolAtLocation(sf)
    const symbols = module ? checker.getExportsOfModule(module) : []
    const specifier = entry.subpath === '.' ? pkg.name : `${pkg.name}/${entry.subpath.slice(2)}`
    text += `\n## ${specifier} (${symbols.length} names)\n\n\`\`\`ts\n`
    for (const symbol of [...symbols].sort((a, b) => a.name.localeCompare(b.name)))
      text += `// ${symbol.name}\n${describe(symbol, checker)}\n\n`
    text = text.replace(/\n\n$/, '\n') + '```\n'
  }
  return text
}

const check = process.argv.includes('--check')
const stale = []
mkdirSync(apiDir, { recursive: true })
const packages = publishedEntries()
const program = createProgram(packages)
for (const pkg of packages) {
  const file = join(apiDir, `${pkg.dir}.api.md`)
  const text = report(pkg, program)
  const old = existsSync(file) ? readFileSync(file, 'utf8') : ''
  if (old === text) continue
  if (check) stale.push(`api/${pkg.dir}.api.md`)
  else writeFileSync(file, text)
}
if (stale.length > 0) {
  console.error(
    `The public API changed: ${stale.join(', ')} differ from the sources.\n` +
      'If the change is meant, run `node scripts/api-report.mjs` and commit api/ with it.',
  )
  process.exit(1)
}
