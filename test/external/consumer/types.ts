// A TypeScript consumer of every package's root entry. The packed-package test compiles it as
// types.mts and types.cts (module node16: ESM and CJS) and as types.ts (moduleResolution
// bundler). The @ts-expect-error lines fail the compile if the types resolve to `any`.
import { createLimiter, type Decision, type Limiter, type RuleInput } from '@floodgate/core'
import type { CountersSnapshot } from '@floodgate/core/metrics'
import type { AdaptiveState } from '@floodgate/core/adaptive'
import { rateLimit as expressRateLimit, type RateLimitMiddleware } from '@floodgate/express'
import fastifyRateLimit, { rateLimit, type FastifyRateLimitOptions } from '@floodgate/fastify'
import { rateLimit as koaRateLimit } from '@floodgate/koa'
import { RedisStore, type RedisStoreOptions } from '@floodgate/redis'
import { validateWithCore, type RulesServiceOptions } from '@floodgate/rules-service'
import { createPacer, fetchWithRetry, type Pacer } from '@floodgate/client'
import { OTHER_RULES, type MetricsSource } from '@floodgate/metrics'

export const rules: RuleInput[] = [{ id: 'one', limit: 1, window: '1m' }]
export const limiter: Limiter = createLimiter({ rules })
export const decision: Decision | Promise<Decision> = limiter.check({
  method: 'GET',
  path: '/',
  ip: '192.0.2.1',
  headers: {},
})
// @ts-expect-error decisionTimeoutMs is a number
createLimiter({ rules, decisionTimeoutMs: 'soon' })
export const counters: CountersSnapshot = limiter.counters()
export const adaptive: AdaptiveState | undefined = limiter.adaptive('one')
// @ts-expect-error the limit is a number
export const notALimit: string | undefined = adaptive?.limit
// @ts-expect-error the counts are numbers
export const notCounted: string = counters.total.allowed

export const expressMiddleware: RateLimitMiddleware = expressRateLimit(rules)
export const fastifyOptions: FastifyRateLimitOptions = { rules }
export const samePlugin: boolean = fastifyRateLimit === rateLimit
export const koaLimiter: Limiter<unknown> = koaRateLimit(rules).limiter

export const redisOptions: RedisStoreOptions = {
  url: 'redis://127.0.0.1:6379',
  callTimeoutMs: 50,
}
export const openStore = (): RedisStore => new RedisStore(redisOptions)

export const problems: readonly string[] = validateWithCore(rules)
export const serviceOptions: Partial<RulesServiceOptions> = {}

export const get = (): Promise<Response> =>
  fetchWithRetry('http://127.0.0.1:3000/', undefined, { maxAttempts: 2 })
// @ts-expect-error maxAttempts is a number
export const wrong = (): Promise<Response> => fetchWithRetry('/', {}, { maxAttempts: 'two' })

export const pacer: Pacer = createPacer({ rate: 10, warmup: 5_000 })
// @ts-expect-error rate is a number
createPacer({ rate: 'ten' })

export const metricsSource: MetricsSource = limiter
export const otherRules: '_other' = OTHER_RULES
