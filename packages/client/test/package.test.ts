import { expect, it } from 'vitest'
import * as client from '@floodgate/client'

it('exports exactly the documented names', () => {
  expect(Object.keys(client).sort()).toEqual([
    'DEFAULT_BASE_MS',
    'DEFAULT_CAP_MS',
    'DEFAULT_THROTTLE_K',
    'DEFAULT_THROTTLE_WINDOW_MS',
    'LocallyRefusedResponse',
    'backoffCeilingMs',
    'backoffDelayMs',
    'createAdaptiveThrottle',
    'createPacer',
    'fetchWithRetry',
    'parseRateLimit',
    'parseRetryAfter',
    'refusalProbability',
    'serverWaitMs',
    'sleep',
    'withRetry',
  ])
})
