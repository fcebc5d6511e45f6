import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../../../..', import.meta.url))

/** One app host of a fleet test: a child process with its own Redis connection. */
export interface FleetHost<R> {
  readonly child: ChildProcess
  /** Resolves when the worker has connected and is waiting for its start message. */
  readonly ready: Promise<void>
  /** Resolves with the worker's final report (its first object message). */
  readonly report: Promise<R>
}

/**
 * Start a fleet worker (a TypeScript file run through tsx) with its configuration in
 * `FG_FLEET`. The worker sends a non-object message when ready and an object when done.
 */
export function forkFleetHost<R>(worker: string, config: object): FleetHost<R> {
  const child = fork(worker, [], {
    cwd: root,
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, FG_FLEET: JSON.stringify(config) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const ready = new Promise<void>((resolve) => child.once('message', () => resolve()))
  const report = new Promise<R>((resolve) =>
    child.on('message', (m) => typeof m === 'object' && resolve(m as R)),
  )
  return { child, ready, report }
}
