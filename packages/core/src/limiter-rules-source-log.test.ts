import { afterEach, describe, expect, it, vi } from 'vitest'
import { prepareMount } from './http/mount.js'
import { createLimiter } from './limiter.js'
import type { Logger } from './logger.js'
import type { Rule } from './rules/rule.js'
import type { RulesSource } from './rules/sources/rules-source.js'
import { parseRules } from './rules/schema.js'

// What a limiter says about its rules source: a failed load is a warning (the rules in force
// stay), a recovery is info, a set the host cannot apply is an error — through the logger
// given, or on stderr when there is none, never silently.

/** A source the test drives by hand. */
function handSource() {
  let deliver: (rules: Rule[], revision?: string) => void = () => {}
  let fail: (err: Error) => void = () => {}
  let recover: () => void = () => {}
  const source: RulesSource = {
    start(onRules, onError, _limiter, onRecovered) {
      deliver = onRules
      fail = onError
      recover = onRecovered ?? (() => {})
      return Promise.resolve()
    },
    stop() {},
  }
  return {
    source,
    deliver: (rules: unknown[], revision?: string) => deliver(parseRules(rules), revision),
    fail: (message: string) => fail(new Error(message)),
    recover: () => recover(),
  }
}

function recordingLogger() {
  const lines: { level: string; msg: string | undefined; obj: Record<string, unknown> }[] = []
  const at =
    (level: string) =>
    (obj: object, msg?: string): void =>
      void lines.push({ level, msg, obj: obj as Record<string, unknown> })
  const logger: Logger = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
  }
  return { logger, lines }
}

afterEach(() => {
  vi.restoreAllMocks()
})

describe('a limiter reporting its rules source', () => {
  it('logs a failed load at warn, the recovery at info, and a refused set at error', async () => {
    const hand = handSource()
    const { logger, lines } = recordingLogger()
    const limiter = createLimiter({ rules: hand.source, logger })
    await limiter.ready
    hand.deliver([{ id: 'per-ip', limit: 1, window: '1m' }], '1')
    hand.fail('connection refused')
    hand.recover()
    // Keyed by `user`, which this host has no key builder for: refused, the old set stays.
    hand.deliver([{ id: 'per-user', key: 'user', limit: 1, window: '1m' }], '2')
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['info', 'rules updated'],
      ['warn', 'rules source failed; keeping the rules in force'],
      ['info', 'rules source recovered'],
      ['error', 'rules refused; keeping the rules in force'],
    ])
    expect(lines[0]!.obj).toMatchObject({ revision: '1', rules: 1 })
    expect((lines[1]!.obj['err'] as Error).message).toBe('connection refused')
    expect(lines[3]!.obj).toMatchObject({ revision: '2', code: 'FG_ERR_KEY_BUILDER_UNKNOWN' })
    expect((lines[3]!.obj['err'] as Error).message).toMatch(/user/)
    expect(limiter.rules.map((r) => r.id)).toEqual(['per-ip'])
    await limiter.close()
  })

  it('writes the same events to stderr when no logger is given', async () => {
    const written: string[] = []
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk))
      return true
    })
    const hand = handSource()
    const limiter = createLimiter({ rules: hand.source })
    await limiter.ready
    hand.deliver([{ id: 'per-ip', limit: 1, window: '1m' }], '1')
    hand.fail('connection refused')
    hand.recover()
    hand.deliver([{ id: 'per-user', key: 'user', limit: 1, window: '1m' }], '2')
    vi.restoreAllMocks()
    expect(written).toHaveLength(4)
    expect(written[0]).toBe('floodgate: rules updated\n')
    expect(written[1]).toBe(
      'floodgate: rules source failed; keeping the rules in force: connection refused (FG_ERR_RULES_SOURCE)\n',
    )
    expect(written[2]).toBe('floodgate: rules source recovered\n')
    expect(written[3]).toMatch(
      /^floodgate: rules refused; keeping the rules in force: .*"user".*FG_ERR_KEY_BUILDER_UNKNOWN.*\n$/,
    )
    await limiter.close()
  })

  it("an adapter's mount: the app's logger, else the framework's, else stderr", async () => {
    const written: string[] = []
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk))
      return true
    })
    const refuse = async (app?: Logger, framework?: Logger) => {
      const hand = handSource()
      const { limiter } = prepareMount(hand.source, app ? { logger: app } : {}, [], framework)
      await limiter.ready
      hand.deliver([{ id: 'per-user', key: 'user', limit: 1, window: '1m' }], '1')
      await limiter.close()
    }
    const app = recordingLogger()
    const framework = recordingLogger()
    await refuse(app.logger, framework.logger)
    expect(app.lines.map((l) => [l.level, l.msg])).toEqual([
      ['error', 'rules refused; keeping the rules in force'],
    ])
    expect(framework.lines).toEqual([])
    await refuse(undefined, framework.logger)
    expect(framework.lines.map((l) => l.level)).toEqual(['error'])
    expect(written).toEqual([])
    await refuse()
    vi.restoreAllMocks()
    expect(written).toHaveLength(1)
    expect(written[0]).toMatch(/^floodgate: rules refused; keeping the rules in force: .*"user"/)
  })
})
