import { describeAdaptersAgree, describeAppCallbackAnswers } from '@floodgate/core/testing'
import { agreeExpress } from '../../express/test/harness.js'
import { agreeFastify } from '../../fastify/test/harness.js'
import { agreeKoa } from '../../koa/test/harness.js'

const adapters = { express: agreeExpress, fastify: agreeFastify, koa: agreeKoa }
const runs = Number(process.env.AGREE_RUNS ?? 25)

// The same requests, byte for byte, to the three adapters: the same answers and decisions.
describeAdaptersAgree(adapters, runs)

// The app's own callbacks answering anything (async ones included) on the three adapters.
describeAppCallbackAnswers(adapters, runs)
