import { describeAbortProperty } from '@floodgate/core/testing'
import { startExpress } from './harness.js'

describeAbortProperty({ name: 'express', start: startExpress })
