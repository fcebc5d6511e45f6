import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { httpRules, type Rule } from '@floodgate/core'
import {
  startRulesService,
  type RunningRulesService,
  type StartRulesServiceOptions,
} from '@floodgate/rules-service'
import { DATABASE_URL, TOKENS, dropSchema, postgresAvailable, uniqueSchema } from './helpers.js'

// A service's data can go away and come back empty: an in-memory service restarted, a PGlite
// directory or a PostgreSQL database deleted and provisioned again. Its revisions then start
// over at 0, so a revision names no state on its own: a host holding the ETag of revision 1 of
// the lost set must not be told 304 for another set at revision 1, and a write conditional on
// the lost set must be refused. A restart with the data intact keeps every ETag valid.

const hasPostgres = await postgresAvailable()
const auth = { authorization: `Bearer ${TOKENS.admin}` }
const base = { tokens: [{ name: 'ops', role: 'admin' as const, token: TOKENS.admin }] }
const SERVICE = 'checkout'
const RULESET = `/v1/services/${SERVICE}/ruleset`

/** A rule told apart by its id and its limit. */
type Shape = [id: string, limit: number]
const body = (shapes: readonly Shape[]) => ({
  rules: shapes.map(([id, limit]) => ({ id, limit, window: '1m' })),
})
const shapesOf = (rules: readonly { id: string; limit?: unknown }[]): Shape[] =>
  rules.map((r) => [r.id, Number(r.limit)])

async function putAll(service: RunningRulesService, shapes: readonly Shape[]) {
  const res = await fetch(`${service.url}/v1/services/${SERVICE}/rules`, {
    method: 'PUT',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(body(shapes)),
  })
  expect(res.status).toBe(200)
}

async function read(service: RunningRulesService, ifNoneMatch?: string) {
  const res = await fetch(`${service.url}${RULESET}`, {
    headers: ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch },
  })
  const etag = res.headers.get('etag') ?? ''
  if (res.status === 304) return { status: 304, etag, shapes: undefined, set: undefined }
  const set = (await res.json()) as { rules: { id: string; limit: number }[] }
  return { status: res.status, etag, shapes: shapesOf(set.rules), set }
}

/**
 * A host: core's httpRules polling over real HTTP whichever service is up now (the services
 * come and go on new ports; the host keeps one URL). It polls only when told to.
 */
class Host {
  rules: Shape[] | undefined
  #source: ReturnType<typeof httpRules> | undefined
  constructor(private readonly target: () => string) {}

  /** A new process: nothing delivered yet, and the first poll asks for the whole set. */
  async start(): Promise<void> {
    this.#source?.stop()
    this.rules = undefined
    const source = httpRules(`http://rules.invalid${RULESET}`, {
      intervalMs: 1_000_000_000,
      jitter: 0,
      timeoutMs: 10_000,
      fetch: (input, init) =>
        fetch(
          `${this.target()}${new URL(input instanceof Request ? input.url : input).pathname}`,
          init,
        ),
    })
    this.#source = source
    await source.start(
      (rules: Rule[]) => (this.rules = shapesOf(rules)),
      () => {},
    )
  }

  poll(): Promise<void> {
    return this.#source!.poll()
  }

  stop(): void {
    this.#source?.stop()
  }
}

async function patchLimit(service: RunningRulesService, id: string, ifMatch: string) {
  return fetch(`${service.url}/v1/services/${SERVICE}/rules/${id}`, {
    method: 'PATCH',
    headers: { ...auth, 'content-type': 'application/merge-patch+json', 'if-match': ifMatch },
    body: JSON.stringify({ limit: 99 }),
  })
}

describe('a service whose data is lost and provisioned again', () => {
  it('in memory: a host at revision 1 of the lost set reloads the new revision 1, and a write conditional on the lost set is refused', async () => {
    let service = await startRulesService({ ...base, port: 0, services: [SERVICE] })
    const host = new Host(() => service.url)
    try {
      await putAll(service, [['old', 1]])
      const before = await read(service)
      await host.start()
      expect(host.rules).toEqual([['old', 1]])

      // The process restarts: an in-memory service starts empty, and one write later is at
      // revision 1 again, with other rules.
      await service.stop()
      service = await startRulesService({ ...base, port: 0, services: [SERVICE] })
      await putAll(service, [['new', 2]])

      const after = await read(service, before.etag)
      expect(after.status).toBe(200)
      expect(after.shapes).toEqual([['new', 2]])
      expect(after.etag).not.toBe(before.etag)
      await host.poll()
      expect(host.rules).toEqual([['new', 2]])

      // A change prepared against the lost set is refused, not applied to the new one: by
      // If-Match, or by sending back the set as read (GET, edit, PUT).
      expect((await patchLimit(service, 'new', before.etag)).status).toBe(412)
      const stale = await fetch(`${service.url}/v1/services/${SERVICE}/rules`, {
        method: 'PUT',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ ...before.set, ...body([['mine', 3]]) }),
      })
      expect(stale.status).toBe(412)
      expect((await read(service)).shapes).toEqual([['new', 2]])
    } finally {
      host.stop()
      await service.stop()
    }
  }, 120_000)
})

describe('a service restarted with its data intact', () => {
  let dir: string | undefined
  afterAll(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true })
  })

  it('PGlite directory: every ETag stays valid, so hosts get 304s and reload nothing', async () => {
    dir = await mkdtemp(join(tmpdir(), 'fg-data-loss-'))
    const options = { ...base, port: 0, services: [SERVICE], dataDir: dir }
    let service = await startRulesService(options)
    try {
      await putAll(service, [['kept', 4]])
      const before = await read(service)
      await service.stop()
      service = await startRulesService(options)
      const after = await read(service, before.etag)
      expect(after).toMatchObject({ status: 304, etag: before.etag })
    } finally {
      await service.stop()
    }
  }, 120_000)
})

describe.skipIf(!hasPostgres)('PostgreSQL: restarts, a dropped database, outages', () => {
  const schemas: string[] = []
  afterAll(async () => {
    for (const schema of schemas) await dropSchema(schema)
  })
  const start = (schema: string): Promise<RunningRulesService> =>
    startRulesService({
      ...base,
      port: 0,
      services: [SERVICE],
      databaseUrl: DATABASE_URL,
      schema,
    } satisfies StartRulesServiceOptions)

  it('a schema dropped under a running service: 500s while it is gone (hosts keep their rules), then the new set, never a 304 for the lost one', async () => {
    const schema = uniqueSchema('fg_rules_loss')
    schemas.push(schema)
    const running = await start(schema)
    let other: RunningRulesService | undefined
    const host = new Host(() => running.url)
    try {
      await putAll(running, [['old', 1]])
      const before = await read(running)
      await host.start()
      expect(host.rules).toEqual([['old', 1]])

      await dropSchema(schema)
      expect((await fetch(`${running.url}${RULESET}`)).status).toBe(500)
      await host.poll()
      expect(host.rules).toEqual([['old', 1]])

      // Another instance provisions the schema again (as a restart would) and writes a new
      // revision 1; the instance that kept running serves it.
      other = await start(schema)
      await putAll(other, [['new', 2]])
      const after = await read(running, before.etag)
      expect(after).toMatchObject({ status: 200, shapes: [['new', 2]] })
      await host.poll()
      expect(host.rules).toEqual([['new', 2]])
      expect((await patchLimit(running, 'new', before.etag)).status).toBe(412)
    } finally {
      host.stop()
      await other?.stop()
      await running.stop()
    }
  }, 60_000)

  // The model: the service's set (or none while it is down), the host's rules, and which ETags
  // name the current state. Any sequence of writes, restarts, data losses, outages, host
  // restarts and polls: after a poll the host holds the service's current set (or, while the
  // service is down, what it held before; a host started while it is down holds nothing), and
  // a write conditional on an ETag succeeds exactly when no change or loss came after it.
  type Op =
    | { kind: 'write'; shapes: Shape[] }
    | { kind: 'conditional'; which: number }
    | { kind: 'restart' | 'lose' | 'down' | 'host-restart' | 'poll' }
  const shape = fc.tuple(fc.constantFrom('a', 'b'), fc.integer({ min: 1, max: 2 }))
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({
      kind: fc.constant('write' as const),
      shapes: fc.uniqueArray(shape, { maxLength: 2, selector: ([id]) => id }),
    }),
    fc.record({ kind: fc.constant('conditional' as const), which: fc.nat(5) }),
    fc.record({
      kind: fc.constantFrom<'restart' | 'lose' | 'down' | 'host-restart' | 'poll'>(
        'restart',
        'lose',
        'down',
        'host-restart',
        'poll',
      ),
    }),
  )

  it('property: after any sequence of writes, restarts, losses and outages, a poll gives the host the current set', async () => {
    const schema = uniqueSchema('fg_rules_prop')
    schemas.push(schema)
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 8 }), async (ops) => {
        await dropSchema(schema)
        let service: RunningRulesService | undefined = await start(schema)
        const url = service.url
        const host = new Host(() => service?.url ?? url)
        // Every ETag read so far, each with the change count it was read at.
        const seen: { etag: string; at: number }[] = []
        let changes = 0
        let current: Shape[] = []
        const remember = async (s: RunningRulesService) =>
          seen.push({ etag: (await read(s)).etag, at: changes })
        try {
          await host.start()
          await remember(service)
          for (const o of ops) {
            if (o.kind === 'down') {
              await service?.stop()
              service = undefined
            } else if (o.kind === 'restart') {
              await service?.stop()
              service = await start(schema)
            } else if (o.kind === 'lose') {
              await service?.stop()
              await dropSchema(schema)
              service = await start(schema)
              current = []
              changes++
            } else if (o.kind === 'host-restart') {
              await host.start()
              expect(host.rules).toEqual(service === undefined ? undefined : current)
            } else if (o.kind === 'poll') {
              const held = host.rules
              await host.poll()
              expect(host.rules).toEqual(service === undefined ? held : current)
            } else if (service === undefined) {
              continue
            } else if (o.kind === 'write') {
              await putAll(service, o.shapes)
              if (JSON.stringify(o.shapes) !== JSON.stringify(current)) changes++
              current = o.shapes
              await remember(service)
            } else if (o.kind === 'conditional') {
              const pick = seen[seen.length - 1 - (o.which % seen.length)]!
              const res = await patchLimit(service, current[0]?.[0] ?? 'none', pick.etag)
              if (pick.at !== changes) expect(res.status).toBe(412)
              else expect(res.status).toBe(current.length === 0 ? 404 : 200)
              if (res.status === 200) {
                // Patching a limit that is already 99 changes nothing: same revision, same ETag.
                if (current[0]![1] !== 99) changes++
                current = [[current[0]![0], 99], ...current.slice(1)]
                await remember(service)
              }
            }
          }
        } finally {
          host.stop()
          await service?.stop()
        }
      }),
      { numRuns: 25 },
    )
  }, 300_000)
})
