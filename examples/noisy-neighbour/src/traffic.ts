import { performance } from 'node:perf_hooks'
import { withRetry } from '@floodgate/client'
import { CLIENT_HEADER } from './rules.js'

/** The load: several well-behaved clients at a steady rate, one noisy neighbour that spikes. */
export interface TrafficPlan {
  readonly durationMs: number
  /** Well-behaved clients, each sending the same steady load. */
  readonly wellClients: number
  readonly wellItemsRps: number
  readonly wellExportRps: number
  /** The noisy neighbour's load outside its spike equals a well-behaved client's. */
  readonly noisyItemsRps: number
  readonly noisyExportRps: number
  /** The spike, as fractions of the duration. */
  readonly spikeFrom: number
  readonly spikeTo: number
  /** The noisy client never has more requests than this in flight (keeps the demo bounded). */
  readonly noisyMaxInFlight: number
  /** Every request is abandoned after this long. */
  readonly requestTimeoutMs: number
}

/** The default plan: in a 10 s run, the neighbour spikes from 2 s to 8.5 s. */
export const DEFAULT_PLAN: TrafficPlan = {
  durationMs: 10_000,
  wellClients: 4,
  wellItemsRps: 8,
  wellExportRps: 1,
  noisyItemsRps: 120,
  noisyExportRps: 25,
  spikeFrom: 0.2,
  spikeTo: 0.85,
  noisyMaxInFlight: 400,
  requestTimeoutMs: 5000,
}

/**
 * The slowdown scenario's load: steady, lists only (so every request asks the database for the
 * same work and latency reads as its health), the neighbour at 7.5 times a well-behaved
 * client's rate from start to end. Together 92 lists a second: under half of what the
 * 4-connection pool answers at 20 ms a list, nearly twice what it answers at 80 ms.
 */
export const SLOWDOWN_PLAN: TrafficPlan = {
  durationMs: 8000,
  wellClients: 4,
  wellItemsRps: 8,
  wellExportRps: 0,
  noisyItemsRps: 60,
  noisyExportRps: 0,
  spikeFrom: 0,
  spikeTo: 1,
  noisyMaxInFlight: 400,
  requestTimeoutMs: 5000,
}

export type Endpoint = 'items' | 'export'

/** One request as its client saw it. */
export interface Sample {
  readonly client: string
  readonly noisy: boolean
  readonly endpoint: Endpoint
  /** When it was first sent, in ms since the run started. */
  readonly t: number
  /** Until the final answer, retries and their waits included. */
  readonly latencyMs: number
  /** Final status; 0 for a network error or a timeout. */
  readonly status: number
  /** Attempts made (1 without retries). */
  readonly attempts: number
}

/** Everything the load generator saw. */
export interface TrafficResult {
  readonly samples: Sample[]
  /** Noisy requests not sent because too many were in flight already. */
  readonly noisySkipped: number
  /**
   * Real time from the start to the last request sent. Longer than the plan's duration when
   * the machine was too busy to keep the schedule (late requests go out in a catch-up burst).
   */
  readonly sendWindowMs: number
}

interface Stream {
  readonly client: string
  readonly noisy: boolean
  readonly endpoint: Endpoint
  readonly rps: (t: number) => number
  nextAt: number
}

/** Client names: `well-1` … `well-N` and `noisy`. */
export function clientNames(plan: TrafficPlan): { well: string[]; noisy: string } {
  return {
    well: Array.from({ length: plan.wellClients }, (_, i) => `well-${i + 1}`),
    noisy: 'noisy',
  }
}

function streams(plan: TrafficPlan): Stream[] {
  const { well, noisy } = clientNames(plan)
  const out: Stream[] = []
  const inSpike = (t: number): boolean =>
    t >= plan.spikeFrom * plan.durationMs && t < plan.spikeTo * plan.durationMs
  well.forEach((client, i) => {
    // Clients are out of phase with each other, as independent clients are.
    const phase = i / well.length
    out.push({
      client,
      noisy: false,
      endpoint: 'items',
      rps: () => plan.wellItemsRps,
      nextAt: (phase * 1000) / plan.wellItemsRps,
    })
    out.push({
      client,
      noisy: false,
      endpoint: 'export',
      rps: () => plan.wellExportRps,
      nextAt: (phase * 1000) / plan.wellExportRps,
    })
  })
  out.push({
    client: noisy,
    noisy: true,
    endpoint: 'items',
    rps: (t) => (inSpike(t) ? plan.noisyItemsRps : plan.wellItemsRps),
    nextAt: 0,
  })
  out.push({
    client: noisy,
    noisy: true,
    endpoint: 'export',
    rps: (t) => (inSpike(t) ? plan.noisyExportRps : plan.wellExportRps),
    nextAt: 0,
  })
  // A stream at 0 a second throughout (no exports) sends nothing.
  return out.filter((s) => s.rps(0) > 0 || s.rps(plan.spikeFrom * plan.durationMs) > 0)
}

/**
 * Sends the plan's traffic to `baseUrl` and records every request. The schedule is
 * deterministic (fixed intervals), so two runs send exactly the same requests at the same
 * moments; only the service's answers differ.
 *
 * Well-behaved clients use `@floodgate/client`: they retry 429 and 503 with full-jitter
 * backoff, honouring `Retry-After`. The noisy client fires and forgets.
 *
 * @param baseUrl - the service
 * @param plan - the load
 * @returns every sample and the count of noisy requests skipped
 */
export async function runTraffic(baseUrl: string, plan: TrafficPlan): Promise<TrafficResult> {
  const samples: Sample[] = []
  const inFlight = new Set<Promise<void>>()
  let noisyInFlight = 0
  let noisySkipped = 0
  let lastSentAt = 0
  const start = performance.now()

  const send = (stream: Stream, t: number): void => {
    if (stream.noisy && noisyInFlight >= plan.noisyMaxInFlight) {
      noisySkipped++
      return
    }
    let attempts = 0
    const counted: typeof fetch = (input, init) => {
      attempts++
      return fetch(input, init)
    }
    const doFetch = stream.noisy
      ? counted
      : withRetry(counted, { baseMs: 100, capMs: 1000, maxAttempts: 4, maxTotalMs: 3000 })
    if (stream.noisy) noisyInFlight++
    const sentAt = performance.now()
    lastSentAt = sentAt - start
    const p = doFetch(`${baseUrl}/${stream.endpoint}`, {
      headers: { [CLIENT_HEADER]: stream.client },
      signal: AbortSignal.timeout(plan.requestTimeoutMs),
    })
      .then(async (res) => {
        await res.arrayBuffer()
        return res.status
      })
      .catch(() => 0)
      .then((status) => {
        samples.push({
          client: stream.client,
          noisy: stream.noisy,
          endpoint: stream.endpoint,
          t,
          latencyMs: performance.now() - sentAt,
          status,
          attempts,
        })
        if (stream.noisy) noisyInFlight--
        inFlight.delete(p)
      })
    inFlight.add(p)
  }

  const all = streams(plan)
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now() - start
      for (const stream of all) {
        while (stream.nextAt <= now && stream.nextAt < plan.durationMs) {
          const rps = stream.rps(stream.nextAt)
          // At 0 a second (outside or inside the spike) look again 10 ms later.
          if (rps > 0) send(stream, stream.nextAt)
          stream.nextAt += rps > 0 ? 1000 / rps : 10
        }
      }
      if (now >= plan.durationMs) {
        clearInterval(timer)
        resolve()
      }
    }
    const timer = setInterval(tick, 2)
  })
  // Every request is bounded by its timeout, so this ends.
  while (inFlight.size > 0) await Promise.all([...inFlight])
  samples.sort((a, b) => a.t - b.t)
  return { samples, noisySkipped, sendWindowMs: lastSentAt }
}
