import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { afterAll, afterEach, beforeEach, expect, inject, it } from 'vitest'

// Test support shared by the docs tests of every package (a private workspace package, never
// published). A docs test reads the fenced blocks of a docs page and runs each one as a module, so
// a snippet that no longer runs, or whose claims no longer hold, fails the build.

const repoRoot = new URL('../../', import.meta.url)
const docsDir = new URL('docs/', repoRoot)

/** A fenced code block of a docs page. */
export interface Snippet {
  readonly page: string
  /** The fence's language (`ts`, `json`, …; `''` for a bare fence). */
  readonly lang: string
  /** 1-based line of the opening fence, to name the snippet in test titles and failures. */
  readonly line: number
  /** The block's text, without the indentation of its fence (a block inside a list item). */
  readonly code: string
}

declare module 'vitest' {
  export interface ProvidedContext {
    /**
     * The folder where this vitest run's docs tests leave the snippets they ran, for the one
     * type-check of them all (`types.test.ts`); set by `global-setup.ts` in a run from the
     * repository root.
     */
    floodgateDocsSnippets: string | undefined
  }
}

/** A snippet as one runner wrote it to a file: the file, the snippet, the setup lines above it. */
export interface SnippetFile {
  readonly path: string
  readonly snippet: Snippet
  readonly setupLines: number
}

/** The list of its files each runner keeps in its folder of the run's snippet folder. */
const RECORD = 'snippets.json'

/** The text of `docs/<page>`. */
export function readDoc(page: string): string {
  return readFileSync(new URL(page, docsDir), 'utf8')
}

/** The fenced blocks of `docs/<page>` whose language is one of `langs`, in page order. */
export function docSnippets(page: string, langs: readonly string[] = ['ts', 'js']): Snippet[] {
  const lines = readDoc(page).split('\n')
  const found: Snippet[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)```(\S*)\s*$/.exec(lines[i]!)
    if (!open) continue
    const [, indent = '', lang = ''] = open
    const start = i
    const body: string[] = []
    while (++i < lines.length && !/^ *```\s*$/.test(lines[i]!)) {
      body.push(lines[i]!.startsWith(indent) ? lines[i]!.slice(indent.length) : lines[i]!)
    }
    if (langs.includes(lang)) found.push({ page, lang, line: start + 1, code: body.join('\n') })
  }
  return found
}

/**
 * {@link docSnippets}, checked to be exactly `count` blocks: a docs test runs each block it
 * knows, so a block added to the page fails the test until the test covers it too.
 */
export function coveredSnippets(
  page: string,
  count: number,
  langs: readonly string[] = ['ts', 'js'],
): Snippet[] {
  const found = docSnippets(page, langs)
  if (found.length !== count)
    throw new Error(
      `docs/${page} has ${found.length} ${langs.join('/')} blocks (${found.map(where).join(', ')}); ` +
        `its docs test runs ${count}: run the new ones there too`,
    )
  return found
}

/** `docs/<page>:<line>`, for test titles. */
export function where(snippet: Snippet): string {
  return `docs/${snippet.page}:${snippet.line}`
}

/**
 * Runs snippets as ES modules from a temporary folder whose `node_modules` is the package's,
 * so a snippet's imports resolve as they would in that package (its deps and devDeps; the
 * vitest aliases map `@floodgate/*` to the workspace sources). The folder is outside the
 * repository, so a run never leaves files that git, eslint or tsc would see.
 *
 * In a vitest run from the repository root, the folder is inside the run's snippet folder and
 * stays there until the run ends: `types.test.ts` then type-checks the snippets of every
 * package in one program, instead of one program per docs test.
 */
export class SnippetRunner {
  private dir: string | undefined
  /** Every file run so far, with its snippet and how many lines of setup precede it. */
  private readonly files: SnippetFile[] = []
  private readonly runFolder = inject('floodgateDocsSnippets')

  /** @param packageDir - the package whose dependencies the snippets may import */
  constructor(private readonly packageDir: URL) {}

  /** Whether the run type-checks these snippets with every other package's, after the tests. */
  get checkedWithTheRun(): boolean {
    return this.runFolder !== undefined
  }

  // Made on the first run, so a test file that fails while loading leaves nothing behind.
  private folder(): string {
    if (this.dir === undefined) {
      this.dir = mkdtempSync(join(this.runFolder ?? tmpdir(), 'floodgate-docs-'))
      const modules = fileURLToPath(new URL('node_modules', this.packageDir))
      symlinkSync(modules, join(this.dir, 'node_modules'))
    }
    return this.dir
  }

  /**
   * Run `snippet` as a module and return its exports. `before` is prepended (the setup that a
   * fragment shown in the docs takes for granted: an `app`, some `rules`) and `after` appended
   * (typically `export { app }`, so the test can check what the snippet built). `set` adds
   * options to calls the snippet makes: `{ 'createLimiter({ rules, store': 'decisionTimeoutMs:
   * 5_000' }` runs `createLimiter({ rules, store, decisionTimeoutMs: 5_000 })`, for a setting
   * the page leaves at its default but the test cannot (a production deadline on a loaded CI
   * machine). Each key must occur exactly once in the snippet, and lines stay where they are.
   */
  async run(
    snippet: Snippet,
    around: { before?: string; after?: string; set?: Readonly<Record<string, string>> } = {},
  ): Promise<Record<string, unknown>> {
    const name = `${snippet.page.replace(/\W/g, '-')}-${this.files.length + 1}.ts`
    const file = join(this.folder(), name)
    const code = withOptions(snippet, around.set ?? {})
    const source = [around.before, code, around.after].filter((s) => s !== undefined)
    // `export {}` makes every file a module, so fragments never share a global scope.
    writeFileSync(file, [...source, 'export {}\n'].join('\n'))
    const setupLines = around.before === undefined ? 0 : around.before.split('\n').length
    this.files.push({ path: file, snippet, setupLines })
    if (this.runFolder !== undefined)
      writeFileSync(join(this.folder(), RECORD), JSON.stringify(this.files))
    return (await import(file)) as Record<string, unknown>
  }

  /**
   * Type-check every snippet run so far (see {@link snippetTypeErrors}). A run from the
   * repository root does this for all packages at once instead ({@link checkedWithTheRun}).
   */
  typeErrors(): string[] {
    return snippetTypeErrors(this.files)
  }

  /**
   * Remove the temporary folder (the `node_modules` link, not what it points to), unless the
   * run still has to type-check it (the run removes it when it ends).
   */
  close(): void {
    if (this.dir !== undefined && this.runFolder === undefined)
      rmSync(this.dir, { recursive: true, force: true })
    this.dir = undefined
  }
}

/** `snippet`'s code with `, value` inserted after each key of `set` (see {@link SnippetRunner.run}). */
function withOptions(snippet: Snippet, set: Readonly<Record<string, string>>): string {
  let code = snippet.code
  for (const [at, value] of Object.entries(set)) {
    const count = code.split(at).length - 1
    if (count !== 1)
      throw new Error(
        `docs/${snippet.page}: \`${at}\` occurs ${count} times in the snippet, not once`,
      )
    if (value.includes('\n')) throw new Error(`set: the option for \`${at}\` must be one line`)
    code = code.replace(at, () => `${at}, ${value}`)
  }
  return code
}

/**
 * Type-check snippet files in one program, with the repository's compiler options (strict;
 * `@floodgate/*` mapped to the sources): a snippet a TypeScript user copies must compile, not
 * only run. Each file resolves its imports from its own folder, so the snippets of every
 * package can share the program. Returns the errors as `docs/<page>:<line>: message`, or
 * `setup of …` for an error in the code a test put around the snippet.
 */
export function snippetTypeErrors(files: readonly SnippetFile[]): string[] {
  const root = fileURLToPath(repoRoot)
  const config = ts.readConfigFile(join(root, 'tsconfig.json'), (f) => ts.sys.readFile(f))
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root)
  // Nothing is emitted, so no declarations: an exported Express app's type has no name.
  const program = ts.createProgram(
    files.map((f) => f.path),
    { ...options, noEmit: true, declaration: false },
  )
  // Only the snippet files are checked: the sources they import are checked by `pnpm typecheck`.
  const byPath = new Map(files.map((f) => [f.path, f]))
  const errors: string[] = []
  for (const { path } of files) {
    const source = program.getSourceFile(path)
    if (source === undefined) continue
    const diagnostics = [
      ...program.getSyntacticDiagnostics(source),
      ...program.getSemanticDiagnostics(source),
    ]
    for (const d of diagnostics) {
      const file = byPath.get(d.file?.fileName ?? '')
      if (!file || !d.file) continue
      const line = d.file.getLineAndCharacterOfPosition(d.start ?? 0).line - file.setupLines
      const inSnippet = line >= 0 && line < file.snippet.code.split('\n').length
      const at = inSnippet
        ? `docs/${file.snippet.page}:${file.snippet.line + 1 + line}`
        : `setup of ${where(file.snippet)}`
      errors.push(`${at}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`)
    }
  }
  return errors
}

/** Every snippet file the runners of this vitest run wrote into the run's `folder`. */
export function recordedSnippets(folder: string): SnippetFile[] {
  return readdirSync(folder, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => {
      const record = join(folder, entry.name, RECORD)
      try {
        return JSON.parse(readFileSync(record, 'utf8')) as SnippetFile[]
      } catch (err) {
        // A runner that ran nothing wrote no record.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
        throw err
      }
    })
}

/**
 * Register a test that type-checks every snippet `runner` ran, last in the file; in a run from
 * the repository root, none: `types.test.ts` checks them with every package's, in one program.
 */
export function itTypeChecks(runner: SnippetRunner, title = 'the snippets type-check'): void {
  if (runner.checkedWithTheRun) return
  it(
    title,
    () => {
      expect(runner.typeErrors()).toEqual([])
    },
    60_000,
  )
}

/** `http://<address>:<port>` of a listening server; loopback when it listens on every address. */
export function baseUrl(server: net.Server): string {
  const { address, port } = server.address() as AddressInfo
  const host =
    address === '::' || address === '0.0.0.0'
      ? '127.0.0.1'
      : address.includes(':')
        ? `[${address}]`
        : address
  return `http://${host}:${port}`
}

/**
 * While installed, every server a snippet starts listens on a free port instead of the one
 * the docs show (`app.listen(3000)` runs as written), and is recorded so the test can send
 * it requests and close it.
 */
export class FreePorts {
  readonly servers: net.Server[] = []
  private readonly original = net.Server.prototype.listen

  constructor() {
    const servers = this.servers
    const original = this.original
    net.Server.prototype.listen = function (this: net.Server, ...args: unknown[]) {
      servers.push(this)
      const [first] = args
      if (typeof first === 'number') args[0] = 0
      else if (typeof first === 'object' && first !== null && 'port' in first)
        args[0] = { ...first, port: 0 }
      return original.apply(this, args as Parameters<typeof original>)
    } as typeof original
  }

  /** The base URL of the `index`-th server, once it listens. */
  async url(index = 0): Promise<string> {
    const server = this.servers[index]
    if (!server) throw new Error(`the snippet started ${this.servers.length} servers`)
    if (!server.listening) await new Promise((resolve) => server.once('listening', resolve))
    return baseUrl(server)
  }

  /** Put `listen` back and close every server recorded. */
  async close(): Promise<void> {
    net.Server.prototype.listen = this.original
    await Promise.all(
      this.servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            if ('closeAllConnections' in server && typeof server.closeAllConnections === 'function')
              server.closeAllConnections()
            server.close(() => resolve())
          }),
      ),
    )
  }
}

/** What {@link docsHarness} sets up for a docs test file. */
export interface DocsHarness {
  readonly runner: SnippetRunner
  /** The current test's {@link FreePorts} (a new one for every test, closed after it). */
  ports(): FreePorts
  /** Register, last in the file, a test that type-checks every snippet the tests ran (see {@link itTypeChecks}). */
  itTypeChecks(): void
}

/**
 * A {@link SnippetRunner} for the package at `packageDir`, removed after the file, and a
 * {@link FreePorts} around every test.
 */
export function docsHarness(packageDir: URL): DocsHarness {
  const runner = new SnippetRunner(packageDir)
  let current: FreePorts | undefined
  beforeEach(() => {
    current = new FreePorts()
  })
  afterEach(async () => {
    await current?.close()
    current = undefined
  })
  afterAll(() => runner.close())
  return {
    runner,
    ports() {
      if (!current) throw new Error('ports() is only there while a test runs')
      return current
    },
    itTypeChecks() {
      itTypeChecks(runner)
    },
  }
}
