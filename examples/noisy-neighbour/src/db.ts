import type { ChildProcess } from 'node:child_process'
import { PoolTimeoutError } from './db-pool.js'
import type { DbPool } from './db-pool.js'

/** What an app host needs from the database: run a query of some work for a client. */
export interface Db {
  query(client: string, workMs: number): Promise<void>
}

/** IPC messages between an app host process and the process that owns the database. */
export type DbRequest = { type: 'db'; id: number; client: string; workMs: number }
export type DbReply = { type: 'db-reply'; id: number; error?: 'timeout' | undefined }

/**
 * The database seen from an app host process: every query travels over the IPC channel to
 * the parent, which owns the one pool the whole fleet shares (as app hosts share a database).
 */
export class IpcDb implements Db {
  private nextId = 1
  private readonly pending = new Map<number, { resolve: () => void; reject: (e: Error) => void }>()

  constructor() {
    process.on('message', (message: DbReply) => {
      if (message?.type !== 'db-reply') return
      const waiter = this.pending.get(message.id)
      if (waiter === undefined) return
      this.pending.delete(message.id)
      if (message.error) waiter.reject(new PoolTimeoutError('database pool timeout'))
      else waiter.resolve()
    })
  }

  query(client: string, workMs: number): Promise<void> {
    const id = this.nextId++
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      const request: DbRequest = { type: 'db', id, client, workMs }
      process.send?.(request)
    })
  }
}

/** Serves a child host's IPC queries from the parent's pool. */
export function serveDb(child: ChildProcess, pool: DbPool): void {
  child.on('message', (message: DbRequest) => {
    if (message?.type !== 'db') return
    const reply = (error?: 'timeout'): void => {
      if (child.connected) child.send({ type: 'db-reply', id: message.id, error } satisfies DbReply)
    }
    pool.query(message.client, message.workMs).then(
      () => reply(),
      () => reply('timeout'),
    )
  })
}
