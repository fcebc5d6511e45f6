import { describeHttp2AbortProperty } from '@floodgate/core/testing'
import { serveKoaHttp2 } from './http2-serve.js'

// MemoryStore answering at once, then with its answers held and delivered in any order.
describeHttp2AbortProperty('koa', serveKoaHttp2)
