import { describe, expect, it } from 'vitest'
import { parseDemoArgs } from './args.js'

describe('parseDemoArgs', () => {
  it('has defaults for everything', () => {
    expect(parseDemoArgs([], {})).toEqual({
      scenario: 'all',
      durationMs: undefined,
      framework: 'express',
      store: 'memory',
      redisUrl: undefined,
      hosts: 1,
      rules: 'service',
      reportDir: undefined,
      help: false,
    })
  })

  it.each([
    ['10s', 10_000],
    ['5000ms', 5000],
    ['3', 3000],
    ['1.5s', 1500],
  ])('--duration %s → %i ms', (value, ms) => {
    expect(parseDemoArgs(['--duration', value], {}).durationMs).toBe(ms)
  })

  it.each(['all', 'noisy-neighbour', 'slowdown'] as const)('--scenario %s', (scenario) => {
    expect(parseDemoArgs(['--scenario', scenario], {}).scenario).toBe(scenario)
  })

  it('ignores the -- that pnpm passes through', () => {
    expect(parseDemoArgs(['--', '--hosts', '3'], {}).hosts).toBe(3)
  })

  it('takes the Redis URL from REDIS_URL', () => {
    const args = parseDemoArgs(['--store', 'redis'], { REDIS_URL: 'redis://127.0.0.1:6380' })
    expect(args.redisUrl).toBe('redis://127.0.0.1:6380')
  })

  it.each([
    [['--duration', 'soon'], /--duration: expected a time/],
    [['--duration', '0.5s'], /--duration: expected 1s to 300s/],
    [['--scenario', 'outage'], /--scenario: expected all, noisy-neighbour or slowdown/],
    [['--framework', 'hapi'], /--framework: expected express, fastify or koa, got 'hapi'/],
    [['--store', 'redis'], /--store redis: set REDIS_URL/],
    [['--store', 'memcached'], /--store: expected memory or redis/],
    [['--hosts', '0'], /--hosts: expected an integer from 1 to 16/],
    [['--rules', 'file'], /--rules: expected service or static/],
    [['--nope'], /Unknown option/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseDemoArgs(argv, {})).toThrow(message)
  })
})
