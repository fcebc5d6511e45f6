import { describeAdapterScenarios } from '@floodgate/core/testing'
import { startFastify } from './harness.js'

describeAdapterScenarios({ name: 'fastify', start: startFastify })
