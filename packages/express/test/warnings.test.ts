import { createServer } from 'node:http'
import { rateLimit } from '@floodgate/express'
import { describeMisconfigurationWarnings, listenOnLoopback } from '@floodgate/core/testing'
import express from 'express'

const TRUST = { none: false, every: true, one: 1 } as const

describeMisconfigurationWarnings('express', {
  serve(trust, options) {
    const app = express()
    app.set('trust proxy', TRUST[trust])
    app.use(rateLimit([{ id: 'per-ip', limit: 100, window: '1m' }], options))
    app.get('/', (_req, res) => void res.send('ok'))
    return listenOnLoopback(createServer(app))
  },
  rateLimit,
  untrusted: /X-Forwarded-For.*trust proxy/,
  trustsEveryProxy: { code: 'FG_WRN_TRUST_PROXY_ALL', message: /trusts every proxy/ },
})
