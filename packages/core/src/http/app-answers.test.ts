import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { handlerAnswer, ignoreSettlement, isPromiseLike } from './app-answers.js'
import { prepareMount } from './mount.js'
import { routeCost } from './route-cost.js'

// An `async` callback that fails answers a rejected promise; nobody handling it would end a
// Node server (Node's default is --unhandled-rejections=throw).
describe('app callbacks that answer a promise', () => {
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason)
  beforeEach(() => {
    unhandled.length = 0
    process.on('unhandledRejection', onUnhandled)
  })
  afterEach(async () => {
    // Rejections are reported after the microtasks of the tick that made them.
    await new Promise((resolve) => setImmediate(resolve))
    process.off('unhandledRejection', onUnhandled)
    expect(unhandled).toEqual([])
  })

  it('tells thenables, and nothing else, as promises', () => {
    expect(isPromiseLike(Promise.resolve(1))).toBe(true)
    expect(isPromiseLike({ then: () => {} })).toBe(true)
    expect(isPromiseLike(Object.assign(() => {}, { then: () => {} }))).toBe(true)
    for (const v of [undefined, null, 1, 'then', true, {}, [], { then: 1 }]) {
      expect(isPromiseLike(v), JSON.stringify(v)).toBe(false)
    }
    const revoked = Proxy.revocable({}, {})
    revoked.revoke()
    expect(isPromiseLike(revoked.proxy)).toBe(false)
    const throwing = Object.defineProperty({}, 'then', {
      get() {
        throw new Error('no')
      },
    })
    expect(isPromiseLike(throwing)).toBe(false)
  })

  it('settles an ignored rejection', () => {
    ignoreSettlement(Promise.reject(new Error('ignored')))
    const thenable = {
      then(_ok: unknown, fail: (e: unknown) => void) {
        fail(new Error('ignored thenable'))
      },
    }
    ignoreSettlement(thenable as unknown as PromiseLike<unknown>)
  })

  it("hands a refusal handler's rejection on, and nothing for a synchronous one", async () => {
    expect(handlerAnswer(undefined)).toBeUndefined()
    expect(handlerAnswer(3)).toBeUndefined()
    await expect(handlerAnswer(Promise.resolve('x'))).resolves.toBeUndefined()
    await expect(handlerAnswer(Promise.reject(new Error('refusal failed')))).rejects.toThrow(
      'refusal failed',
    )
  })

  it('charges 1 for an async cost function, rejected or not, and warns once', () => {
    const warn = vi.fn()
    const rejecting = async (): Promise<number> => Promise.reject(new Error('page size lookup'))
    expect(routeCost(rejecting as never, {}, warn)).toBeUndefined()
    expect(routeCost((() => Promise.resolve(5)) as never, {}, warn)).toBeUndefined()
    expect(warn).toHaveBeenCalledWith(
      'FG_WRN_COST_INVALID',
      'the cost function answered a promise (cost is synchronous); charging 1',
    )
  })

  it('counts an async requestWasSuccessful as failed, rejected or not', () => {
    const logger = { debug() {}, info() {}, warn: vi.fn(), error() {} }
    const mount = prepareMount(
      [{ id: 'r', limit: 1, window: '1s' }],
      {
        logger,
        requestWasSuccessful: (async () => Promise.reject(new Error('audit log down'))) as never,
      },
      [],
    )
    expect(mount.settings.outcomeOf!(undefined, {} as never)).toBe('failed')
    expect(logger.warn).toHaveBeenCalledWith(
      { code: 'FG_WRN_OUTCOME_INVALID' },
      'requestWasSuccessful answered a promise (it is synchronous); the request counted as failed',
    )
    void mount.limiter.close()
  })

  it('checks the request when skip answers a rejected promise', () => {
    const mount = prepareMount(
      [{ id: 'r', limit: 1, window: '1s' }],
      { warnings: false, skip: (() => Promise.reject(new Error('no'))) as never },
      [],
    )
    expect(mount.settings.skip!({})).toBe(false)
    void mount.limiter.close()
  })
})
