import { expect, it } from 'vitest'
import * as client from '@floodgate/client'

it('exports exactly the documented names', () => {
  expect(Object.keys(client).sort()).toEqual([
    'DEFAULT_BASE_MS',
    'DEFAULT_CAP_MS',
    'backoffCeilingMs',
    'backoffDelayMs',
    'fetchWithRetry',
    'parseRateLimit',
    'parseRetryAfter',
    'serverWaitMs',
    'sleep',
    'withRetry',
  ])
})
