import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { TOKENS } from './helpers.js'

// `floodgate-rules` as a real process. Runs the TypeScript source through tsx (the repository
// root's tsconfig maps @floodgate/* to sources), so no build is needed.
const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const CLI = fileURLToPath(new URL('../src/cli.ts', import.meta.url))

/** A `serve` process that said it is listening. */
export interface Running {
  child: ChildProcess
  url: string
  /** Everything it wrote so far, stdout and stderr. */
  output: () => string
}

/** Every process started, for the test file's afterAll to kill. */
export const children: ChildProcess[] = []

/** Start the CLI with `args`, without DATABASE_URL or a tokens file from the environment. */
export function run(args: string[], env: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env, DATABASE_URL: '', FLOODGATE_TOKENS_FILE: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  return child
}

/** Resolves with the exit code once the process has exited. */
export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode)
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)))
}

/** Collect a process's stdout and stderr. */
export function capture(child: ChildProcess): () => string {
  let out = ''
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()))
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()))
  return () => out
}

/** The arguments of `serve` on a PGlite directory, with the service `checkout`. */
export const serveArgs = (dataDir: string): string[] => [
  'serve',
  '--port',
  '0',
  '--data-dir',
  dataDir,
  '--service',
  'checkout',
]

/** Start `serve` and wait (bounded) for its "listening" log line. */
export function serve(dataDir: string): Promise<Running> {
  const child = run(serveArgs(dataDir), { FLOODGATE_ADMIN_TOKEN: TOKENS.admin })
  const output = capture(child)
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no "listening" line within 50 s:\n${output()}`)),
      50_000,
    )
    const onData = () => {
      const line = output()
        .split('\n')
        .find((l) => l.includes('floodgate rules service listening'))
      if (line) {
        clearTimeout(timer)
        resolve({ child, url: (JSON.parse(line) as { url: string }).url, output })
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`exited with ${code}:\n${output()}`))
    })
  })
}
