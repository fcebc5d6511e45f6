import { createServer } from 'node:http'
import type { Limiter } from '@floodgate/core'
import {
  describeSpellingProperty,
  type SpellingVariant,
  listenOnLoopback,
} from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/express'
import express, { type Request } from 'express'

function variant(name: string, caseSensitive: boolean, strict: boolean): SpellingVariant {
  return {
    name,
    async start(limiter, routes) {
      const app = express()
      app.set('case sensitive routing', caseSensitive)
      app.set('strict routing', strict)
      app.use(rateLimit(limiter as unknown as Limiter<Request>))
      for (const r of routes) {
        app[r.method === 'GET' ? 'get' : 'post'](r.path, (req, res) => {
          res.json({ route: r.path, params: req.params })
        })
      }
      return listenOnLoopback(createServer(app))
    },
  }
}

describeSpellingProperty('express', [
  variant('default routing', false, false),
  variant('case-sensitive, strict routing', true, true),
])
