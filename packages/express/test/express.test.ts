import { describeAdapterScenarios, describeHostileFuzz } from '@floodgate/core/testing'
import { startExpress } from './harness.js'

describeAdapterScenarios({ name: 'express', start: startExpress })
describeHostileFuzz({ name: 'express', start: startExpress })
