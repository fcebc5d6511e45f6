import { spawn, type ChildProcess } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { baseUrl, itTypeChecks, SnippetRunner, type Snippet } from '@floodgate/docs-snippets'
import { IS_CI, waitFor } from './helpers.js'

// The README's rules-service quick start, run as written: its shell blocks in bash (the real
// `npx floodgate-rules serve` on PGlite, the real curl), then its host snippet in Koa, against
// that service. Two changes only: port 8080 becomes port 0 (the port the service then reports,
// read from its "listening" line, goes where 8080 was in the other blocks), and the serve line
// is sent to the background so the next block can run, as a second terminal would.
const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const PACKAGE = new URL('..', import.meta.url)
const BIN = fileURLToPath(new URL('../bin/floodgate-rules.js', import.meta.url))
const built = existsSync(fileURLToPath(new URL('../dist/cli.js', import.meta.url)))
if (!built && IS_CI) throw new Error('the README quick start runs the built CLI: pnpm build first')

/** The README's blocks between the rules-service paragraph and the next one. */
function quickStart(): { sh: string[]; ts: Snippet } {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const from = readme.indexOf('**Rules at run time**')
  const to = readme.indexOf('**Clients that back off**')
  expect(from).toBeGreaterThan(0)
  const section = readme.slice(from, to)
  const firstLine = readme.slice(0, from).split('\n').length
  const blocks = [...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({
    lang: m[1]!,
    code: m[2]!,
    line: firstLine + section.slice(0, m.index).split('\n').length - 1,
  }))
  const sh = blocks.filter((b) => b.lang === 'sh').map((b) => b.code)
  const ts = blocks.filter((b) => b.lang === 'ts')
  expect(sh).toHaveLength(2)
  expect(ts).toHaveLength(1)
  return { sh, ts: { page: 'README.md', lang: 'ts', line: ts[0]!.line, code: ts[0]!.code } }
}

describe.skipIf(!built)(
  'README quick start: rules service, a rule keyed by user, a Koa host',
  () => {
    const { sh, ts } = quickStart()
    let port: number
    let dir: string
    let shell: ChildProcess | undefined
    let output = ''
    const runner = new SnippetRunner(PACKAGE)
    const hosts: Server[] = []
    const sources: { stop(): void }[] = []
    const stderr: string[] = []

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'floodgate-quick-start-'))
      // A project with @floodgate/rules-service installed: npx finds its bin there.
      writeFileSync(join(dir, 'package.json'), '{ "name": "quick-start", "private": true }\n')
      mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true })
      symlinkSync(BIN, join(dir, 'node_modules', '.bin', 'floodgate-rules'))
      // The service picks its own port: no other process can take it between a pick and the
      // bind. The serve line's output goes to the test as before, and to a file the shell reads
      // the port from.
      const [serve, create] = sh.map((block) => block.replaceAll('8080', '$PORT'))
      const background = serve!
        .replace('--port $PORT', '--port 0')
        .replace(/^(npx floodgate-rules serve[^#\n]*?)\s*(#.*)?$/m, '$1 2>&1 | tee serve.log &')
      expect(background).toMatch(/--port 0 .*&$/m)
      const script = [
        'set -e',
        background,
        // Wait (bounded) for the "listening" line, as a person does, and read the port off it.
        'PORT=',
        `for i in $(seq 1 600); do PORT=$(grep -o '"url":"http://127.0.0.1:[0-9]*' serve.log 2>/dev/null | grep -o '[0-9]*$' || true); [ -n "$PORT" ] && break; sleep 0.1; done`,
        'echo "QUICK-START-PORT=$PORT"',
        `for i in $(seq 1 300); do curl -sf http://127.0.0.1:$PORT/healthz >/dev/null && break; sleep 0.1; done`,
        create,
        'echo',
        'echo QUICK-START-CREATED',
        'wait',
      ].join('\n')
      shell = spawn('bash', ['-c', script], {
        cwd: dir,
        detached: true,
        env: {
          ...process.env,
          DATABASE_URL: '',
          FLOODGATE_TOKENS_FILE: '',
          npm_config_offline: 'true',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      shell.stdout!.on('data', (c: Buffer) => (output += c.toString()))
      shell.stderr!.on('data', (c: Buffer) => (output += c.toString()))
      await waitFor(
        () => output.includes('QUICK-START-CREATED'),
        'the service and the curl',
        60_000,
      )
      port = Number(/QUICK-START-PORT=(\d+)/.exec(output)?.[1])
      expect(port, output).toBeGreaterThan(0)
    }, 90_000)

    afterAll(async () => {
      vi.restoreAllMocks()
      // The hosts stop polling before the service goes away.
      for (const source of sources) source.stop()
      for (const server of hosts) server.close()
      runner.close()
      // The whole group: bash, npx and the service.
      if (shell?.pid !== undefined) {
        try {
          process.kill(-shell.pid, 'SIGTERM')
        } catch {
          // already gone
        }
        await new Promise((resolve) => {
          if (shell!.exitCode !== null) resolve(undefined)
          else shell!.once('exit', resolve)
        })
      }
      rmSync(dir, { recursive: true, force: true })
    })

    /** Run the host snippet (or a variant of it) in a Koa app that serves /api/orders. */
    async function host(code: string): Promise<string> {
      const built = await runner.run(
        { ...ts, code: code.replaceAll('8080', String(port)) },
        {
          before: [
            "import Koa from 'koa'",
            'const app = new Koa()',
            "// The app's authentication: the user named in x-user.",
            "app.use((ctx, next) => { ctx.state.user = ctx.get('x-user') ? { id: ctx.get('x-user') } : undefined; return next() })",
          ].join('\n'),
          after:
            "app.use((ctx) => { ctx.body = { ok: true } })\nexport const server = app.listen(0, '127.0.0.1')\nexport { rules }",
        },
      )
      const server = built.server as Server
      hosts.push(server)
      sources.push(built.rules as { stop(): void })
      if (!server.listening) await new Promise((resolve) => server.once('listening', resolve))
      return baseUrl(server)
    }

    it('the curl creates the rule keyed by user', () => {
      // The service's own JSON log lines share the terminal: find curl's answer among them.
      const answer =
        /\{"service":"checkout","revision":\d+,"version":"[^"]+","rule":\{[^{}]*\}\}/.exec(
          output,
        )?.[0]
      expect(answer, output).toBeDefined()
      expect(JSON.parse(answer!)).toMatchObject({
        service: 'checkout',
        revision: 1,
        rule: { id: 'api-per-user', key: 'user' },
      })
    })

    /** Record stderr's floodgate lines (in each test: mocks are restored between tests). */
    const recordStderr = () => {
      const write = process.stderr.write.bind(process.stderr)
      vi.spyOn(process.stderr, 'write').mockImplementation((chunk, ...rest: unknown[]) => {
        if (String(chunk).startsWith('floodgate: ')) {
          stderr.push(String(chunk))
          return true
        }
        return (write as (c: unknown, ...r: unknown[]) => boolean)(chunk, ...rest)
      })
    }

    it('the host enforces it per user, and says so on stderr (no logger given)', async () => {
      recordStderr()
      const url = await host(ts.code)
      const get = (user: string) => fetch(`${url}/api/orders`, { headers: { 'x-user': user } })
      await waitFor(
        async () =>
          (await get('warm-up')).headers.get('ratelimit-policy')?.includes('api-per-user') === true,
        "the service's rule",
        30_000,
      )
      expect(stderr).toContain('floodgate: rules updated\n')
      // 100 a minute for alice: the first 100 pass; then, as the bucket refills at 100 a minute
      // while this loop runs, a refusal comes (bounded: 300 requests take far less than the
      // two minutes it would take to refill 200).
      const statuses: number[] = []
      for (let i = 0; i < 300 && !statuses.includes(429); i++) {
        statuses.push((await get('alice')).status)
      }
      expect(statuses.slice(0, 100).every((s) => s === 200)).toBe(true)
      expect(statuses).toContain(429)
      // bob has his own 100.
      expect((await get('bob')).status).toBe(200)
    }, 60_000)

    it('without the user key builder, the host refuses the rules and logs it (never silently)', async () => {
      const withoutKeys = ts.code.replace(/rateLimit\(rules, \{[^\n]*\}\)/, 'rateLimit(rules)')
      expect(withoutKeys).not.toBe(ts.code)
      recordStderr()
      const before = stderr.length
      const url = await host(withoutKeys)
      await waitFor(
        () => stderr.slice(before).some((l) => l.includes('rules refused')),
        `the refusal (stderr: ${stderr.slice(before).join('')}; service: ${output.slice(-2000)})`,
        30_000,
      )
      const line = stderr.slice(before).find((l) => l.includes('rules refused'))!
      expect(line).toMatch(/^floodgate: rules refused; keeping the rules in force: .*"user"/)
      // Nothing enforced: the host has no rules it could apply.
      const res = await fetch(`${url}/api/orders`, { headers: { 'x-user': 'carol' } })
      expect(res.status).toBe(200)
      expect(res.headers.get('ratelimit-policy')).toBeNull()
    }, 60_000)

    itTypeChecks(runner, 'the host snippet type-checks as a TypeScript user copies it')
  },
)
