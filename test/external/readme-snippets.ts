// The TypeScript blocks of the READMEs (the repository's and each package's), as modules a
// consumer of the packed packages could write: each block is compiled as written, with only
// the names a fragment takes for granted (`app`, `rules`, `exportHandler`) declared before it.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { publishedPackages, root } from './packs.js'

export interface ReadmeSnippet {
  /** `README.md:12` or `packages/core/README.md:20`: the opening fence. */
  readonly at: string
  readonly code: string
}

/** The README files whose `ts` blocks are compiled. */
export const readmes: readonly string[] = [
  'README.md',
  ...publishedPackages.map(({ dir }) => join(dir.slice(root.length), 'README.md')),
]

export function readmeSnippets(): ReadmeSnippet[] {
  return readmes.flatMap((readme) => {
    const lines = readFileSync(join(root, readme), 'utf8').split('\n')
    const found: ReadmeSnippet[] = []
    for (let i = 0; i < lines.length; i++) {
      if (lines[i] !== '```ts') continue
      const start = i
      const body: string[] = []
      while (++i < lines.length && lines[i] !== '```') body.push(lines[i]!)
      found.push({ at: `${readme}:${start + 1}`, code: body.join('\n') })
    }
    return found
  })
}

/** Types of the names a fragment uses without defining, by the adapter it imports. */
const givens = {
  express: {
    app: "import('express').Express",
    exportHandler: "import('express').RequestHandler",
  },
  fastify: {
    app: "import('fastify').FastifyInstance",
    exportHandler: "import('fastify').RouteHandlerMethod",
  },
  koa: { app: "import('koa')", exportHandler: "import('koa').Middleware" },
} as const

/** The snippet as a module: declarations of what it takes for granted, then its code. */
export function snippetModule(snippet: ReadmeSnippet): string {
  const { code } = snippet
  const adapter = code.includes("'@floodgate/fastify'")
    ? 'fastify'
    : code.includes("'@floodgate/koa'")
      ? 'koa'
      : 'express'
  const types: Record<string, string> = {
    ...givens[adapter],
    rules: "import('@floodgate/core').RuleInput[]",
  }
  const declared = Object.entries(types)
    .filter(([name]) => new RegExp(`\\b${name}\\b`).test(code))
    .filter(([name]) => !new RegExp(`\\b(const|let|var|function) ${name}\\b`).test(code))
    .map(([name, type]) => `declare const ${name}: ${type}`)
  return [`// ${snippet.at}`, ...declared, code, 'export {}', ''].join('\n')
}
