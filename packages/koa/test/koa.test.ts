import { describeAdapterScenarios, describeHostileFuzz } from '@floodgate/core/testing'
import { startKoa } from './harness.js'

describeAdapterScenarios({ name: 'koa', start: startKoa })
describeHostileFuzz({ name: 'koa', start: startKoa })
