import { describeAdapterScenarios, describeHostileFuzz } from '@floodgate/core/testing'
import { startFastify } from './harness.js'

describeAdapterScenarios({ name: 'fastify', start: startFastify })
describeHostileFuzz({ name: 'fastify', start: startFastify })
