import { randomBytes } from 'node:crypto'
import { httpRules } from '@floodgate/core'
import type { RulesSource } from '@floodgate/core'
import type { RuleInput } from '@floodgate/core'
import { ADAPTIVE_RULES, DEMO_RULES } from './rules.js'

/** The demo's service name in the rules service. */
export const SERVICE = 'noisy-neighbour'

/** The service name of the slowdown scenario's adaptive run (its own rule set). */
export const ADAPTIVE_SERVICE = 'noisy-neighbour-adaptive'

/**
 * The hosts' rules source: poll the rules service every second (production would use the
 * default 10 s); an unchanged rule set costs a 304.
 *
 * @param url - the rule set's URL (`…/v1/services/noisy-neighbour/ruleset`)
 * @returns the source to hand to `createLimiter`
 */
export function httpRulesSource(url: string): RulesSource {
  return httpRules(url, { intervalMs: 1000 })
}

/**
 * Starts the rules service on embedded PGlite (in memory), stores the demo's rules through
 * its API as an operator would (the per-client rule, and the adaptive rule under a second
 * service name), and returns the URLs the hosts poll.
 *
 * @returns the rule sets' URLs and `stop()`
 */
export async function startRulesServiceWithDemoRules(): Promise<{
  url: string
  adaptiveUrl: string
  stop: () => Promise<void>
}> {
  const { startRulesService } = await import('@floodgate/rules-service')
  // A throwaway operator token for this process only; reads stay open (no read-role token).
  const token = randomBytes(24).toString('hex')
  const service = await startRulesService({
    port: 0,
    tokens: [{ name: 'demo-operator', token, role: 'admin' }],
    services: [SERVICE, ADAPTIVE_SERVICE],
  })
  const put = async (name: string, rules: readonly RuleInput[]): Promise<void> => {
    const res = await fetch(`${service.url}/v1/services/${name}/rules`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ rules }),
    })
    if (!res.ok) {
      throw new Error(`rules service refused the demo rules: ${res.status} ${await res.text()}`)
    }
    await res.body?.cancel()
  }
  try {
    await put(SERVICE, DEMO_RULES)
    await put(ADAPTIVE_SERVICE, ADAPTIVE_RULES)
  } catch (error) {
    await service.stop()
    throw error
  }
  return {
    url: `${service.url}/v1/services/${SERVICE}/ruleset`,
    adaptiveUrl: `${service.url}/v1/services/${ADAPTIVE_SERVICE}/ruleset`,
    stop: () => service.stop(),
  }
}
