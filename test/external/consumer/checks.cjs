'use strict'
// What a consumer of each packed package sees, whether it arrived through import() or require():
// the named exports exist and one real call works. Only the package under test is loaded both
// ways; the frameworks it plugs into are always required.
const assert = require('node:assert/strict')
const http = require('node:http')

/** The loader the running checks came through, for a check that needs a sibling entry point. */
let loadSibling = async () => {
  throw new Error('loadSibling is only set while checkAll runs')
}

const oneRequestPerMinute = [{ id: 'one', limit: 1, window: '1m' }]

/** Two GETs to a server handler on a free port: the first admitted, the second refused. */
async function admitsThenRefuses(handler) {
  const server = http.createServer(handler)
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    const url = `http://127.0.0.1:${server.address().port}/`
    const first = await fetch(url)
    assert.equal(first.status, 200)
    assert.match(first.headers.get('ratelimit-policy') ?? '', /"one"/)
    await first.text()
    const second = await fetch(url)
    assert.equal(second.status, 429)
    await second.text()
  } finally {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
}

/** Checks by package specifier; each gets the module as the consumer loaded it. */
const checks = {
  async '@floodgate/core'(m) {
    for (const name of ['createLimiter', 'MemoryStore', 'parseRules', 'staticRules', 'httpRules'])
      assert.equal(typeof m[name], 'function', name)
    const limiter = m.createLimiter({ rules: oneRequestPerMinute })
    const facts = { method: 'GET', path: '/', ip: '192.0.2.1', headers: {} }
    assert.equal(limiter.check(facts).allowed, true)
    const refused = limiter.check(facts)
    assert.equal(refused.allowed, false)
    assert.equal(refused.status, 429)
    await limiter.close()
  },
  async '@floodgate/core/http'(m) {
    for (const name of ['enforce', 'prepareMount', 'formatHeaders', 'validateAdapterOptions'])
      assert.equal(typeof m[name], 'function', name)
    assert.match(m.PROBLEM_CONTENT_TYPE, /^application\/problem\+json/)
    assert.equal(m.retryAfterSeconds(1500), 2)
  },
  async '@floodgate/core/algorithms'(m) {
    for (const name of ['getAlgorithm', 'stateIdOf', 'boundKey'])
      assert.equal(typeof m[name], 'function', name)
    assert.equal(m.getAlgorithm('token-bucket'), m.tokenBucket)
  },
  async '@floodgate/core/rules'(m) {
    for (const name of ['parseRulesDocument', 'compileRules', 'parseDuration'])
      assert.equal(typeof m[name], 'function', name)
    assert.equal(m.parseDuration('1m'), 60_000)
    assert.equal(typeof m.ruleSchema.toJSONSchema(), 'object')
  },
  async '@floodgate/core/options'(m) {
    assert.equal(m.checkPositiveInt('n', undefined, 5), 5)
    // One OptionsError class whichever entry point loaded it: the bundles share their modules.
    const core = await loadSibling('@floodgate/core')
    assert.throws(() => m.checkPositiveInt('n', 0, 5), core.OptionsError)
    assert.ok(Object.keys(m.errorCodes).includes('FG_ERR_OPTIONS_INVALID'))
  },
  async '@floodgate/core/adaptive'(m) {
    assert.equal(typeof m.nextControlState, 'function')
    assert.equal(m.ADAPTIVE_DEFAULTS.percentile, 99)
    const s = { ...m.ADAPTIVE_DEFAULTS, targetMs: 100 }
    const stats = { samples: 100, percentileMs: 200, peakInFlight: 20, inFlight: 20 }
    // Twice the target: halved at most, half of the move taken.
    assert.equal(m.nextControlState({ limit: 20, baselineMs: 0 }, stats, s).limit, 15)
  },
  async '@floodgate/core/metrics'(m) {
    // Types only: the counters, observer and top-clients values come from the limiter itself.
    assert.deepEqual(
      Object.keys(m).filter((k) => k !== 'default' && k !== '__esModule'),
      [],
    )
  },
  async '@floodgate/core/testing'(m) {
    for (const name of ['describeStoreConformance', 'describeAdapterScenarios', 'testRule'])
      assert.equal(typeof m[name], 'function', name)
    const ref = m.referenceModel('fixed-window').create({ limit: 1, windowMs: 1000, burst: 1 })
    assert.equal(ref.consume(1, 0).allowed, true)
    assert.equal(ref.consume(1, 1).allowed, false)
  },
  async '@floodgate/express'(m) {
    const express = require('express')
    assert.equal(typeof m.rateLimit, 'function')
    const app = express()
    app.use(m.rateLimit(oneRequestPerMinute))
    app.get('/', (_req, res) => res.send('ok'))
    await admitsThenRefuses(app)
  },
  async '@floodgate/fastify'(m) {
    const fastify = require('fastify')
    assert.equal(typeof m.rateLimit, 'function')
    assert.equal(m.default, m.rateLimit)
    const app = fastify()
    await app.register(m.rateLimit, { rules: oneRequestPerMinute })
    app.get('/', async () => 'ok')
    try {
      assert.equal((await app.inject('/')).statusCode, 200)
      assert.equal((await app.inject('/')).statusCode, 429)
    } finally {
      await app.close()
    }
  },
  async '@floodgate/koa'(m) {
    const Koa = require('koa')
    assert.equal(typeof m.rateLimit, 'function')
    const app = new Koa()
    app.use(m.rateLimit(oneRequestPerMinute))
    app.use((ctx) => {
      ctx.body = 'ok'
    })
    await admitsThenRefuses(app.callback())
  },
  async '@floodgate/redis'(m) {
    for (const name of [
      'RedisStore',
      'createRedisStore',
      'SyncedStore',
      'createSyncedStore',
      'redisKey',
    ])
      assert.equal(typeof m[name], 'function', name)
    // Internals stay internal.
    for (const name of ['hashTag', 'decideScript']) assert.equal(m[name], undefined, name)
    assert.equal(typeof m.RedisStore.prototype.consume, 'function')
    assert.match(m.redisKey('fg', '192.0.2.1', 'one'), /^fg:\{[\w-]{22}\}:one$/)
  },
  async '@floodgate/rules-service'(m) {
    for (const name of ['createRulesService', 'startRulesService', 'openPgliteDb', 'openPgDb'])
      assert.equal(typeof m[name], 'function', name)
    // Validation goes through the packed core the service depends on.
    assert.deepEqual(m.validateWithCore(oneRequestPerMinute), [])
    assert.notDeepEqual(m.validateWithCore([{ id: 'bad', limit: 'many', window: '1m' }]), [])
  },
  async '@floodgate/client'(m) {
    for (const name of ['fetchWithRetry', 'withRetry', 'parseRetryAfter'])
      assert.equal(typeof m[name], 'function', name)
    const statuses = [429, 200]
    const fetchTwice = m.withRetry(async () => new Response(null, { status: statuses.shift() }), {
      sleep: async () => {},
    })
    assert.equal((await fetchTwice('http://example.test/')).status, 200)
    assert.deepEqual(statuses, [])
    // A new pacer lets one call through at once; the next turn is 100 ms away.
    const pacer = m.createPacer({ rate: 10, clock: () => 60_000 })
    assert.equal(await pacer.acquire(), 0)
    assert.equal(await pacer.tryAcquire(), false)
    // A throttle refuses locally once the server refuses: a 429 that says so.
    const refusing = m.withRetry(async () => new Response(null, { status: 429 }), {
      maxAttempts: 1,
      random: () => 0,
      adaptiveThrottle: true,
    })
    assert.equal((await refusing('http://example.test/')).refusedLocally, undefined)
    const local = await refusing('http://example.test/')
    assert.equal(local.status, 429)
    assert.equal(local.refusedLocally, true)
    assert.ok(local instanceof m.LocallyRefusedResponse)
  },
  async '@floodgate/metrics'(m) {
    assert.deepEqual(m.RULE_OUTCOMES, [
      'allowed',
      'rejected',
      'queued',
      'dropped',
      'shadow_rejected',
      'failed_open',
    ])
    assert.equal(m.OTHER_RULES, '_other')
  },
  async '@floodgate/metrics/prometheus'(m) {
    const { Registry } = require('prom-client')
    const { createLimiter } = require('@floodgate/core')
    const registry = new Registry()
    const limiter = createLimiter({ rules: oneRequestPerMinute })
    m.prometheusMetrics(limiter, { registry })
    const facts = { method: 'GET', path: '/', ip: '192.0.2.1', headers: {} }
    limiter.check(facts)
    limiter.check(facts)
    const text = await registry.metrics()
    assert.match(text, /^floodgate_rule_decisions_total\{rule="one",outcome="rejected"\} 1$/m)
  },
  async '@floodgate/metrics/opentelemetry'(m) {
    const { createLimiter } = require('@floodgate/core')
    const limiter = createLimiter({ rules: oneRequestPerMinute })
    // The global meter is a no-op until an SDK is installed: exporting to it must still work.
    const exporter = m.openTelemetryMetrics(limiter)
    limiter.check({ method: 'GET', path: '/', ip: '192.0.2.1', headers: {} })
    exporter.close()
  },
}

/**
 * Loads each specifier with `load` (the consumer's import() or require()) and runs its check;
 * prints one JSON object: specifier -> null (passed) or the error's code and message.
 */
async function checkAll(specifiers, load) {
  loadSibling = load
  const results = {}
  for (const specifier of specifiers) {
    try {
      const loaded = await load(specifier)
      const check = checks[specifier]
      if (check === undefined) throw new Error(`checks.cjs has no check for ${specifier}`)
      await check(loaded)
      results[specifier] = null
    } catch (err) {
      results[specifier] = { code: err.code, message: String(err.stack ?? err) }
    }
  }
  console.log(JSON.stringify(results))
}

module.exports = { checkAll }
