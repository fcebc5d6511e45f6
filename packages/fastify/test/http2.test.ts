import { describeHttp2 } from '@floodgate/core/testing'
import { serveFastifyHttp2 } from './http2-serve.js'

describeHttp2('fastify', serveFastifyHttp2)
