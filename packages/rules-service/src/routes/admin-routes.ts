import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, FastifyReply } from 'fastify'

// The page is plain files next to src/ and dist/ (no build step); CJS has __dirname, ESM
// has import.meta.url.
const here = typeof __dirname === 'string' ? __dirname : dirname(fileURLToPath(import.meta.url))
// src/routes/ in tests, dist/ once built: both sit under the package root that holds admin/.
const ADMIN_DIR =
  [join(here, '..', 'admin'), join(here, '..', '..', 'admin')].find((dir) =>
    existsSync(join(dir, 'index.html')),
  ) ?? join(here, '..', 'admin')

const ASSETS: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'admin.js': 'text/javascript; charset=utf-8',
  'admin.css': 'text/css; charset=utf-8',
  'fleet.js': 'text/javascript; charset=utf-8',
  'fleet.css': 'text/css; charset=utf-8',
  'uPlot.iife.min.js': 'text/javascript; charset=utf-8',
  'uPlot.min.css': 'text/css; charset=utf-8',
}

// The fleet charts are drawn by uPlot, served from this origin like the page's own files
// (the CSP allows nothing else, and the service may run offline).
const require = createRequire(typeof __filename === 'string' ? __filename : import.meta.url)
const UPLOT_DIR = dirname(require.resolve('uplot/dist/uPlot.iife.min.js'))
const fileOf = (name: string): string =>
  name.startsWith('uPlot.') ? join(UPLOT_DIR, name) : join(ADMIN_DIR, name)

// The page only talks to this origin and runs only its own script.
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

/** Serve the admin page (`/admin/`, its scripts and styles, uPlot's), read once at start. */
export function adminRoutes(app: FastifyInstance): void {
  const files = new Map(
    Object.entries(ASSETS).map(([name, type]) => [
      name,
      { type, body: readFileSync(fileOf(name)) },
    ]),
  )
  const send = (name: string) => {
    const file = files.get(name)
    if (!file) throw new Error(`admin asset ${name} missing`)
    return file
  }
  app.get('/', (_request, reply) => reply.redirect('/admin/'))
  app.get('/admin', (_request, reply) => reply.redirect('/admin/'))
  const serve = (name: string, reply: FastifyReply) => {
    if (!Object.hasOwn(ASSETS, name)) return reply.callNotFound()
    const file = send(name)
    return reply
      .type(file.type)
      .header('content-security-policy', CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-cache')
      .send(file.body)
  }
  app.get('/admin/', (_request, reply) => serve('index.html', reply))
  app.get<{ Params: { file: string } }>('/admin/:file', (request, reply) =>
    serve(request.params.file, reply),
  )
}
