import { describeAbortProperty } from '@floodgate/core/testing'
import { startKoa } from './harness.js'

describeAbortProperty({ name: 'koa', start: startKoa })
