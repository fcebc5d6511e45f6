import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLimiter, type Limiter } from '../limiter.js'
import type { RuleInput } from '../rules/schema.js'

/** A route of the spelling property's app; the handler answers `{ route, params }` as JSON. */
export interface SpellingRoute {
  readonly method: 'GET' | 'POST'
  /** Route pattern in the `/users/:id` syntax all three frameworks share. */
  readonly path: string
}

/** One app configuration of an adapter under the spelling property. */
export interface SpellingVariant {
  /** Shown in the test name (`case-sensitive routing`). */
  readonly name: string
  /**
   * Start an app whose handlers answer `200 {"route": <route.path>, "params": <decoded params>}`
   * as JSON, with the limiter mounted app-wide (Fastify: registered before the routes).
   * @returns the listening port and a close function
   */
  start(
    limiter: Limiter<never>,
    routes: readonly SpellingRoute[],
  ): Promise<{ readonly port: number; close(): Promise<void> }>
}

/** The routes the spelling property mounts. */
export const spellingRoutes: readonly SpellingRoute[] = [
  { method: 'POST', path: '/login' },
  { method: 'GET', path: '/users/:id' },
  { method: 'POST', path: '/users/:id' },
  { method: 'GET', path: '/admin/stats' },
]

// Limits far above what the property sends: only which rules apply is observed.
const big = { limit: 1_000_000, window: '1m' } as const
/** The rules the spelling property decides with: literal, parameter and wildcard paths. */
export const spellingRules: readonly RuleInput[] = [
  { id: 'login', match: 'POST /login', ...big },
  { id: 'me', match: '/users/me', ...big },
  // `@`, `:` and the sub-delimiters: every framework hands `%40me` to `:id` as `@me`.
  { id: 'handle', match: "/users/@me!$&'()+,=:", ...big },
  { id: 'odd', match: 'POST /users/"a"<b>[c]{d}|e^f`g\\h', ...big },
  { id: 'user', match: 'POST /users/:id', ...big },
  { id: 'admin', match: '/admin/**', ...big },
  { id: 'all', ...big },
]

// Every printable ASCII character but `/`, `?`, `#` and `%`: the frameworks hand a parameter
// the same value for each, whether sent as is or percent-encoded.
const ENCODABLE = /[!-~]/
const STRUCTURAL = /[/?#%]/

function hex(c: string): string {
  return c.charCodeAt(0).toString(16).padStart(2, '0')
}

/** A path a request may ask for, before any respelling. */
const basePath = fc.constantFrom(
  ['POST', '/login'] as const,
  ['GET', '/users/me'] as const,
  ['POST', '/users/me'] as const,
  ['GET', "/users/@me!$&'()+,=:"] as const,
  ['POST', '/users/"a"<b>[c]{d}|e^f`g\\h'] as const,
  ['GET', '/users/42'] as const,
  ['POST', '/users/a%2Fb'] as const,
  ['POST', '/users/caf%C3%A9'] as const,
  ['GET', '/admin/stats'] as const,
  ['GET', '/nowhere'] as const,
  // Raw bytes a client should have encoded (`é` goes as its two UTF-8 bytes), a decomposed
  // `é` (NFD), and backslashes, which no framework reads as a slash.
  ['POST', '/users/caf\u00e9'] as const,
  ['POST', '/users/cafe%CC%81'] as const,
  ['GET', '/users\\me'] as const,
  ['GET', '/admin\\stats'] as const,
)

/**
 * Random spellings of a path: printable characters other than `/ ? # %` percent-encoded in either hex case, other
 * encodings in either case, absolute-form (with user info, an IPv6 authority), a trailing slash,
 * repeated slashes, dot segments, upper-case letters, query strings, fragments, and `;`
 * parameters.
 */
export function spellingOf(path: string): fc.Arbitrary<string> {
  const chars: fc.Arbitrary<string>[] = []
  for (let i = 0; i < path.length; i++) {
    const c = path[i]!
    if (c === '%') {
      const enc = path.slice(i, i + 3)
      chars.push(fc.constantFrom(enc.toUpperCase(), enc.toLowerCase()))
      i += 2
    } else if (ENCODABLE.test(c) && !STRUCTURAL.test(c)) {
      const alternatives = [c, `%${hex(c).toUpperCase()}`, `%${hex(c).toLowerCase()}`]
      if (c.toUpperCase() !== c) alternatives.push(c.toUpperCase())
      chars.push(fc.constantFrom(...alternatives))
    } else {
      chars.push(fc.constant(c))
    }
  }
  return fc
    .record({
      chars: fc.tuple(...chars),
      // `;` in the authority: Fastify drops the origin before it looks for a `;` delimiter.
      origin: fc.constantFrom(
        '',
        '',
        'http://x',
        'HTTP://example.com:8080',
        'http://x;a=1',
        'HTTPS://u:p@X',
        'http://[::1]:80',
      ),
      shape: fc.constantFrom('', '', 'trailing', 'double', 'dot', 'dots', 'slash-dot'),
      // `;…` is a query string to Fastify with `useSemicolonDelimiter`, part of the path
      // elsewhere; a fragment is no part of a request target, but the parser lets it through.
      query: fc.constantFrom(
        '',
        '',
        '?a=1',
        '?',
        '?p=/login%2F..',
        ';a=1',
        ';a=1?b=2',
        '#x',
        '#/admin/stats',
        '?a#b',
      ),
    })
    .map(({ chars: cs, origin, shape, query }) => {
      let p = cs.join('')
      if (shape === 'trailing') p += '/'
      else if (shape === 'double') p = '/' + p
      else if (shape === 'dot') p = '/.' + p
      else if (shape === 'dots') p = '/x/..' + p
      else if (shape === 'slash-dot') p = p.replace(/\/(?=[^/]*$)/, '/./')
      return origin + p + query
    })
}

interface RawResponse {
  readonly status: number
  readonly body: string
}

/** Send a request target byte for byte (client libraries would normalise it). */
export function sendRaw(port: number, method: string, target: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(
        `${method} ${target} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
      )
    })
    let data = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => (data += chunk))
    socket.on('error', reject)
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0)
      const head = data.indexOf('\r\n\r\n')
      let body = head === -1 ? '' : data.slice(head + 4)
      // Chunked bodies: the JSON answers here are small, one chunk.
      if (/\r\ntransfer-encoding: chunked/i.test(data.slice(0, head))) {
        body = body.slice(body.indexOf('\r\n') + 2, body.lastIndexOf('\r\n0\r\n'))
      }
      resolve({ status, body })
    })
  })
}

/**
 * The spelling property, through real HTTP: for any two request targets that reach the same
 * handler with the same parameters, the same rules apply. Each run sends random spellings of
 * one path on raw sockets to a real server of the adapter and compares the rule ids the
 * limiter decided with (seen through `onDecision`).
 *
 * @param adapter - shown in the suite name
 * @param variants - app configurations to run the property against
 * @param numRuns - fast-check runs per variant
 */
export function describeSpellingProperty(
  adapter: string,
  variants: readonly SpellingVariant[],
  numRuns: number = 40,
): void {
  describe(`${adapter}: one rule set for every spelling of a request target`, () => {
    for (const variant of variants) {
      describe(variant.name, () => {
        let last: string[] | undefined
        const limiter = createLimiter({
          rules: spellingRules,
          onDecision: (d) => (last = d.outcomes.map((o) => o.rule.id).sort()),
        })
        let app: { readonly port: number; close(): Promise<void> } | undefined
        beforeAll(async () => {
          app = await variant.start(limiter, spellingRoutes)
        })
        afterAll(async () => {
          await app?.close()
          await limiter.close()
        })

        async function rulesFor(method: string, target: string) {
          last = undefined
          const r = await sendRaw(app!.port, method, target)
          return { ...r, rules: last }
        }

        it('applies the same rules to every target that reaches the same handler', async () => {
          await fc.assert(
            fc.asyncProperty(
              basePath.chain(([method, path]) =>
                fc.tuple(
                  fc.constant(method),
                  fc.constant(path),
                  fc.array(spellingOf(path), { minLength: 3, maxLength: 6 }),
                ),
              ),
              async ([method, path, spellings]) => {
                const byHandler = new Map<string, { target: string; rules: string[] }>()
                for (const target of [path, ...spellings]) {
                  const r = await rulesFor(method, target)
                  if (r.status !== 200) continue
                  // Every request a handler answered was decided on.
                  expect(r.rules, `${method} ${target}: no decision`).toBeDefined()
                  const prior = byHandler.get(r.body)
                  if (!prior) byHandler.set(r.body, { target, rules: r.rules! })
                  else {
                    expect(
                      r.rules,
                      `${method} ${target} and ${prior.target} both reached ${r.body}`,
                    ).toEqual(prior.rules)
                  }
                }
              },
            ),
            { numRuns },
          )
        })

        it('applies a literal rule under a parameter route to its encoded spelling', async () => {
          const plain = await rulesFor('POST', '/users/me')
          const encoded = await rulesFor('POST', '/users/%6De')
          expect(plain.body).toBe(encoded.body)
          expect(encoded.rules).toEqual(['all', 'me', 'user'])
        })

        it('applies a literal rule under a parameter route to its spelling with `@`, `:` and sub-delimiters encoded', async () => {
          const plain = await rulesFor('GET', "/users/@me!$&'()+,=:")
          const encoded = await rulesFor('GET', '/users/%40me%21%24%26%27%28%29%2B%2C%3D%3a')
          expect(encoded.body).toBe(plain.body)
          expect(plain.rules).toEqual(['all', 'handle'])
          expect(encoded.rules).toEqual(['all', 'handle'])
        })

        it('applies a literal rule under a parameter route to a target with `;` parameters that reaches it', async () => {
          const plain = await rulesFor('GET', '/users/me')
          for (const target of ['/users/me;a=1', '/users/me;a=1?b=2', '/users/%6De;jsessionid=x']) {
            const r = await rulesFor('GET', target)
            // Fastify with useSemicolonDelimiter routes it as /users/me; elsewhere `id` differs.
            if (r.body === plain.body) expect(r.rules, target).toEqual(plain.rules)
          }
        })

        it('applies a literal rule to an absolute-form target', async () => {
          const r = await rulesFor('POST', 'http://x/login')
          expect(r.status).toBe(200)
          expect(r.rules).toEqual(['all', 'login'])
        })

        it('applies a literal rule to an absolute-form target with a `;` in its authority that reaches it', async () => {
          const plain = await rulesFor('GET', '/users/me')
          for (const target of ['http://x;a/users/me', 'http://u;p@x/users/me;b=2']) {
            const r = await rulesFor('GET', target)
            if (r.body === plain.body) expect(r.rules, target).toEqual(plain.rules)
          }
        })
      })
    }
  })
}

/**
 * A file server behind the limiter, the adapter's framework's way: mounted at the root after
 * the limiter, it serves `<root>/files/secret.txt` (content `secret`) for `/files/secret.txt`
 * and for every other target its framework's file server reads as that path.
 */
export type FileServe = (
  limiter: Limiter<never>,
  root: string,
) => Promise<{ readonly port: number; close(): Promise<void> }>

/** The file `describeFileServerSpellings` serves, under the root it hands to the server. */
const SERVED_FILE = { dir: 'files', name: 'secret.txt', content: 'secret' } as const

/**
 * Spellings of `/files/secret.txt` that a file server reads as that path: dot segments (plain
 * or `%2E`-encoded) and encoded slashes.
 */
const fileSpelling: fc.Arbitrary<string> = fc
  .tuple(
    fc.array(
      fc.constantFrom('x', '.', '%2e', 'files', 'x/..', 'x/%2E%2e', 'x%2F..', 'a%2fb/../..'),
      { maxLength: 3 },
    ),
    fc.constantFrom('/', '%2F', '%2f', '/./', '//', '%2F.%2F'),
    fc.constantFrom('', '?a=1'),
  )
  .map(([prefix, sep, query]) => {
    const head = prefix.length === 0 ? '' : `/${prefix.join('/')}`
    return `${head}/files${sep}secret.txt${query}`
  })

/**
 * Through real HTTP: a rule on a directory (`/files/**`) applies to every target the
 * framework's file server answers with a file from that directory, however the target spells
 * the path (`/x/../files/secret.txt`, `/./files/secret.txt`, `/files%2Fsecret.txt`).
 *
 * @param adapter - shown in the suite name
 * @param serve - starts the adapter's app with the limiter and a file server at the root
 * @param numRuns - fast-check runs
 */
export function describeFileServerSpellings(
  adapter: string,
  serve: FileServe,
  numRuns: number = 60,
): void {
  describe(`${adapter}: a rule on a directory covers every spelling its file server serves`, () => {
    let last: string[] | undefined
    const limiter = createLimiter({
      rules: [
        { id: 'files', match: '/files/**', limit: 1_000_000, window: '1m' },
        { id: 'all', limit: 1_000_000, window: '1m' },
      ],
      onDecision: (d) => (last = d.outcomes.map((o) => o.rule.id).sort()),
    })
    let app: { readonly port: number; close(): Promise<void> } | undefined
    let root: string | undefined
    beforeAll(async () => {
      root = await mkdtemp(join(tmpdir(), 'floodgate-files-'))
      await mkdir(join(root, SERVED_FILE.dir))
      await writeFile(join(root, SERVED_FILE.dir, SERVED_FILE.name), SERVED_FILE.content)
      app = await serve(limiter, root)
    })
    afterAll(async () => {
      await app?.close()
      await limiter.close()
      if (root !== undefined) await rm(root, { recursive: true, force: true })
    })

    async function served(target: string) {
      last = undefined
      const r = await sendRaw(app!.port, 'GET', target)
      return { ...r, rules: last }
    }

    it('serves the file to its plain path, under the rule', async () => {
      const r = await served('/files/secret.txt')
      expect(r.status).toBe(200)
      expect(r.body).toBe(SERVED_FILE.content)
      expect(r.rules).toEqual(['all', 'files'])
    })

    it('applies the rule to dot segments and encoded slashes the server resolves', async () => {
      for (const target of [
        '/x/../files/secret.txt',
        '/./files/secret.txt',
        '/files%2Fsecret.txt',
      ]) {
        const r = await served(target)
        expect(r.body, target).toBe(SERVED_FILE.content)
        expect(r.rules, target).toEqual(['all', 'files'])
      }
    })

    it('for any spelling the server answers with the file', async () => {
      await fc.assert(
        fc.asyncProperty(fileSpelling, async (target) => {
          const r = await served(target)
          if (r.status !== 200) return
          expect(r.body, target).toBe(SERVED_FILE.content)
          expect(r.rules, target).toEqual(['all', 'files'])
        }),
        { numRuns },
      )
    })
  })
}
