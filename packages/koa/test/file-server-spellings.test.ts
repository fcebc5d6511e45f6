import { createServer } from 'node:http'
import { readFile } from 'node:fs/promises'
import { join, posix } from 'node:path'
import type { Limiter } from '@floodgate/core'
import { describeFileServerSpellings, listenOnLoopback } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/koa'
import Koa, { type Context } from 'koa'

// A file server as koa-static (koa-send) reads a path: decoded whole, dot segments resolved,
// nothing above the root.
describeFileServerSpellings('koa', async (limiter, root) => {
  const app = new Koa()
  app.use(rateLimit(limiter as unknown as Limiter<Context>))
  app.use(async (ctx, next) => {
    let decoded: string
    try {
      decoded = decodeURIComponent(ctx.path)
    } catch {
      return next()
    }
    const relative = posix.normalize(`./${decoded}`)
    if (relative.startsWith('..')) return next()
    try {
      ctx.body = await readFile(join(root, relative), 'utf8')
    } catch {
      return next()
    }
  })
  return listenOnLoopback(createServer((req, res) => void app.callback()(req, res)))
})
