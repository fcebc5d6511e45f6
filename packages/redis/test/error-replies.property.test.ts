import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createLimiter, type Decision, type Logger } from '@floodgate/core'
import type { RequestFacts } from '@floodgate/core/http'
import { createRedisStore } from '@floodgate/redis'
import { decodeBatch, encodeReply } from '../src/wire-format.js'
import { ScriptedRespServer, bulk, type Answer } from './helpers/scripted-resp-server.js'

// The error replies Redis gives a script call that did not run (or ran and was refused before
// writing), as Redis 7 words them, and the word a log line must name.
const REFUSALS = {
  LOADING: '-LOADING Redis is loading the dataset in memory',
  NOPERM: "-NOPERM this user has no permissions to run the 'eval' command",
  BUSY: '-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.',
  READONLY: "-READONLY You can't write against a read only replica. script: x, on @user_script:1.",
  OOM: "-OOM command not allowed when used memory > 'maxmemory'. script: x, on @user_script:1.",
  MISCONF:
    '-MISCONF Redis is configured to save RDB snapshots, but it is currently unable to persist to disk.',
  CROSSSLOT: "-CROSSSLOT Keys in request don't hash to the same slot",
  MOVED: '-MOVED 3999 127.0.0.1:6381',
  ASK: '-ASK 3999 127.0.0.1:6381',
  NOSCRIPT: '-NOSCRIPT No matching script. Please use EVAL.',
  'unknown command': "-ERR unknown command 'evalsha', with args beginning with: ",
} as const
type Refusal = keyof typeof REFUSALS
/** Faults: a refusal, an answer of the wrong type after the script ran, or none. */
type Fault = Refusal | 'wrong type' | 'none'

const DEADLINE_MS = 2000
/** A late answer comes this long after the call: past the deadline, by a margin. */
const LATE_MS = DEADLINE_MS + 400

const facts = (ip: string): RequestFacts => ({ method: 'GET', path: '/api', ip, headers: {} })

/**
 * A model Redis behind the scripted server: the concurrency slots taken, by name. A slot taken
 * twice (a script replayed) or released while never taken is recorded as a violation.
 */
class SlotModel {
  readonly held = new Set<number>()
  readonly everTaken = new Set<number>()
  readonly violations: string[] = []

  /** Run one batch as the script would (every entry allowed); one result per entry. */
  run(tail: string): number[][] {
    const results: number[][] = []
    for (const req of decodeBatch(Buffer.from(tail, 'latin1'))) {
      for (const e of req.entries) {
        if (req.mode === 'c' && e.lease > 0) {
          if (this.everTaken.has(e.lease)) this.violations.push(`slot ${e.lease} taken twice`)
          this.everTaken.add(e.lease)
          this.held.add(e.lease)
        } else if (req.mode === 'r' && e.lease > 0) this.held.delete(e.lease)
        results.push([1, 0, e.limit, e.limit - 1, 1000, 0])
      }
    }
    return results
  }
}

const step = fc.record({
  fault: fc.constantFrom<Fault>('none', 'wrong type', ...(Object.keys(REFUSALS) as Refusal[])),
  // Released at once, or held to the end of the sequence (a long request).
  hold: fc.boolean(),
  late: fc.oneof(
    { weight: 5, arbitrary: fc.constant(false) },
    { weight: 1, arbitrary: fc.constant(true) },
  ),
})

describe('RedisStore under error replies of every kind (property, against a model)', () => {
  it('fails open exactly on a fault, names it, never takes a slot twice, and leaves no slot held once Redis is healthy', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 5 }), async (steps) => {
        const model = new SlotModel()
        let fault: Fault = 'none'
        let late = false
        const server = await ScriptedRespServer.start((args, name): Answer => {
          if (fault === 'unknown command' && name !== 'evalsha') {
            // Only EVALSHA is refused: EVAL runs (the store switches to it).
          } else if (fault !== 'none' && fault !== 'wrong type') {
            return Buffer.from(`${REFUSALS[fault]}\r\n`)
          }
          const resp =
            fault === 'wrong type'
              ? (model.run(args.at(-1)!), Buffer.from(':1\r\n'))
              : bulk(encodeReply(model.run(args.at(-1)!)))
          return late ? { afterMs: LATE_MS, resp } : resp
        })
        const lines: string[] = []
        const logger: Logger = {
          warn: (fields: unknown) => {
            const err = (fields as { err?: unknown }).err
            lines.push(err instanceof Error ? err.message : '')
          },
          error: () => {},
          info: () => {},
          debug: () => {},
        }
        const store = createRedisStore({ url: server.url, callTimeoutMs: DEADLINE_MS })
        const limiter = createLimiter({
          store,
          rules: [
            { id: 'rate', limit: 1000, window: '1m' },
            { id: 'slots', algorithm: 'concurrency', limit: 100 },
          ],
          decisionTimeoutMs: DEADLINE_MS,
          // Each step's fail-open is logged: steps are 10 ms apart on this clock.
          failOpenLogIntervalMs: 10,
          clock: () => Date.now() + 10 * stepsDone,
          logger,
        })
        const held: Decision[] = []
        let stepsDone = 0
        try {
          await store.ready
          for (const [i, s] of steps.entries()) {
            fault = s.fault
            late = s.late
            lines.length = 0
            stepsDone++
            const d = await limiter.check(facts(`10.0.0.${i}`))
            // Only that call's answer is late (the releases after it are not).
            late = false
            // EVALSHA refused: the same call goes again as EVAL, which runs.
            const refused =
              s.fault !== 'none' && s.fault !== 'wrong type' && s.fault !== 'unknown command'
            const expectFailedOpen = refused || s.fault === 'wrong type' || s.late
            expect(d.failedOpen).toBe(expectFailedOpen)
            expect(d.allowed).toBe(true)
            if (refused)
              expect(lines.join('\n')).toContain(REFUSALS[s.fault as Refusal].slice(1, 8))
            if (s.hold) held.push(d)
            else limiter.release(d)
            // READONLY reopens the connection (a failover behind one address): calls made
            // before it is open again fail open, as while any reconnect.
            // (At most once a second: a second READONLY within it reopens nothing.)
            if (s.fault === 'READONLY') {
              await new Promise((r) => {
                const timer = setTimeout(r, 1500)
                store.client.once('ready', () => r(clearTimeout(timer)))
              })
            }
            // A late answer lands (its slot, if taken, is given back) before the next step.
            // (A Redis answers in order: every call sent meanwhile, owed releases too, is late.)
            for (let t = 0; t < 200 && s.late && server.unanswered > 0; t++) {
              await new Promise((r) => setTimeout(r, 50))
            }
          }
          // Redis is healthy again: what is held is released, and what failed is owed.
          fault = 'none'
          late = false
          for (const d of held) limiter.release(d)
          const until = Date.now() + 10_000
          while (model.held.size > 0 && Date.now() < until) {
            await new Promise((r) => setTimeout(r, 50))
          }
          expect(model.violations).toEqual([])
          expect([...model.held]).toEqual([])
          // And decisions are Redis's own again, once the late answers still due have come
          // (a Redis answers in order: a call behind them is late too).
          let judged = false
          for (let i = 0; i < 10 && !judged; i++) {
            judged = !(await limiter.check(facts('10.0.1.1'))).failedOpen
          }
          expect(judged).toBe(true)
        } finally {
          await limiter.close()
          await server.stop()
        }
      }),
      { numRuns: 12 },
    )
  }, 240_000)
})
