import { describeAbortProperty } from '@floodgate/core/testing'
import { startFastify } from './harness.js'

describeAbortProperty({ name: 'fastify', start: startFastify })
