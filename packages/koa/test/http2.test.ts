import { describeHttp2 } from '@floodgate/core/testing'
import { serveKoaHttp2 } from './http2-serve.js'

describeHttp2('koa', serveKoaHttp2)
