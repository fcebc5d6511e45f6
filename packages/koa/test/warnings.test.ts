import { createServer } from 'node:http'
import { describeMisconfigurationWarnings, listenOnLoopback } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/koa'
import Koa from 'koa'

// app.proxy and app.maxIpsCount: every hop trusted is proxy on with maxIpsCount 0.
const TRUST = { none: [false, 0], every: [true, 0], one: [true, 1] } as const

describeMisconfigurationWarnings('koa', {
  serve(trust, options) {
    const app = new Koa()
    ;[app.proxy, app.maxIpsCount] = TRUST[trust]
    app.use(rateLimit([{ id: 'per-ip', limit: 100, window: '1m' }], options))
    app.use((ctx) => {
      ctx.body = 'ok'
    })
    return listenOnLoopback(createServer((req, res) => void app.callback()(req, res)))
  },
  rateLimit,
  untrusted: /app\.proxy trusts no proxy.*maxIpsCount/,
  trustsEveryProxy: {
    code: 'FG_WRN_KOA_PROXY_LEFTMOST_IP',
    message: /app\.proxy is on and app\.maxIpsCount is 0/,
  },
  peerOptions: {
    peer: 'koa-ratelimit',
    options: {
      duration: 60_000,
      max: 100,
      errorMessage: 'slow down',
      disableHeader: true,
      blacklist: () => false,
      driver: 'memory',
    },
    hints: [
      /options\.duration .*; write a rule's window/,
      /options\.max .*; write a rule's limit/,
      /options\.errorMessage .*; write onRejected/,
      /options\.disableHeader .*; write headers: false/,
      /options\.blacklist .*; write deny: \{ ips: /,
      /options\.driver .*; write store: a MemoryStore \(the default\)/,
    ],
  },
})
