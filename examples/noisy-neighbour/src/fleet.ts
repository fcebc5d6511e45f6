import { fork } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { AdaptiveState } from '@floodgate/core/adaptive'
import { serveDb } from './db.js'
import type { DbPool } from './db-pool.js'
import { startHost } from './host.js'
import type { DecisionCounts, DecisionSpan, HostConfig } from './host.js'
import { startProxy } from './proxy.js'

/** Decisions of every host, and the span from the first to the last of them. */
export interface FleetDecisions {
  readonly byClient: Record<string, DecisionCounts>
  readonly span: DecisionSpan | undefined
}

function widen(a: DecisionSpan | undefined, b: DecisionSpan | undefined): DecisionSpan | undefined {
  if (a === undefined) return b
  if (b === undefined) return a
  return { firstAt: Math.min(a.firstAt, b.firstAt), lastAt: Math.max(a.lastAt, b.lastAt) }
}

/** The service as the load generator sees it: one URL, whatever runs behind it. */
export interface RunningFleet {
  readonly url: string
  /** Limiter decisions per client key, summed over the hosts, and when they were made. */
  decisions(): Promise<FleetDecisions>
  /**
   * The live state of an adaptive rule, read in this process: only a single in-process host
   * has one to read (an adaptive limit is per host); undefined for a fleet of processes.
   */
  adaptive(ruleId: string): AdaptiveState | undefined
  /** Decisions per client so far, read in this process (empty for a fleet of processes). */
  decisionsNow(): Record<string, DecisionCounts>
  close(): Promise<void>
}

function sumInto(
  total: Record<string, DecisionCounts>,
  part: Record<string, DecisionCounts>,
): void {
  for (const [client, c] of Object.entries(part)) {
    const t = (total[client] ??= { allow: 0, queue: 0, reject: 0, drop: 0 })
    t.allow += c.allow
    t.queue += c.queue
    t.reject += c.reject
    t.drop += c.drop
  }
}

/** Waits for the next message of a type from a child (or its exit, which is an error). */
function nextMessage<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onMessage = (message: { type?: string }): void => {
      if (message?.type !== type) return
      child.off('message', onMessage)
      child.off('exit', onExit)
      resolve(message as T)
    }
    const onExit = (code: number | null): void => {
      child.off('message', onMessage)
      reject(new Error(`app host process exited (code ${String(code)}) before '${type}'`))
    }
    child.on('message', onMessage)
    child.once('exit', onExit)
  })
}

/**
 * Starts the service: one app host in this process, or `hosts` app processes behind a
 * round-robin proxy. Every host queries the same database pool (owned by this process), as a
 * fleet of app servers shares one database.
 *
 * @param config - how each host is set up
 * @param hosts - how many app hosts
 * @param pool - the shared database
 * @returns the service URL, decision counts and `close()`
 */
export async function startFleet(
  config: HostConfig,
  hosts: number,
  pool: DbPool,
): Promise<RunningFleet> {
  if (hosts <= 1) {
    const host = await startHost(config, pool)
    return {
      url: host.url,
      decisions: () => Promise.resolve({ byClient: host.decisions(), span: host.decisionSpan() }),
      adaptive: (ruleId) => host.adaptive(ruleId),
      decisionsNow: () => host.decisions(),
      close: () => host.close(),
    }
  }
  // Children run the TypeScript sources through tsx's loader, as the parent does.
  const tsx = createRequire(import.meta.url).resolve('tsx')
  const entry = fileURLToPath(new URL('./host-process.ts', import.meta.url))
  const children = Array.from({ length: hosts }, () =>
    fork(entry, [JSON.stringify(config)], {
      execArgv: ['--import', pathToFileURL(tsx).href],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  )
  try {
    for (const child of children) serveDb(child, pool)
    const ready = await Promise.all(
      children.map((child) => nextMessage<{ url: string }>(child, 'ready')),
    )
    const proxy = await startProxy(ready.map((r) => r.url))
    return {
      url: proxy.url,
      decisions: async () => {
        const total: Record<string, DecisionCounts> = {}
        let span: DecisionSpan | undefined
        const replies = await Promise.all(
          children.map((child) => {
            const reply = nextMessage<{
              decisions: Record<string, DecisionCounts>
              span: DecisionSpan | undefined
            }>(child, 'stats')
            child.send({ type: 'stats' })
            return reply
          }),
        )
        for (const r of replies) {
          sumInto(total, r.decisions)
          span = widen(span, r.span)
        }
        return { byClient: total, span }
      },
      adaptive: () => undefined,
      decisionsNow: () => ({}),
      close: async () => {
        await proxy.close()
        await Promise.all(
          children.map(async (child) => {
            if (child.exitCode !== null) return
            const exited = once(child, 'exit')
            child.send({ type: 'close' })
            await exited
          }),
        )
      },
    }
  } catch (error) {
    for (const child of children) child.kill()
    throw error
  }
}
