import type { FastifyInstance } from 'fastify'
import type { TokenRegistry } from '../auth.js'
import { etagOf, noneMatchHits } from '../etag.js'
import { parseHostReport, ReportError } from '../fleet-report-body.js'
import type { FleetReports } from '../fleet-reports.js'
import { ProblemError } from '../problem.js'
import type { RulesRepository } from '../rules-repository.js'
import { SERVICE_NAME } from '../service-name.js'
import { accessChecks } from './access.js'

/** What the report routes need from the service. */
export interface ReportRoutesOptions {
  repository: RulesRepository
  tokens: TokenRegistry
  requireReadToken: boolean
  fleet: FleetReports
}

interface ServiceParams {
  service: string
}

const unknownService = (service: string): ProblemError =>
  new ProblemError(
    'not-found',
    `no service named ${JSON.stringify(service)} (an admin creates it with PUT /v1/services/${service})`,
  )

/**
 * Register `POST /v1/services/:service/report` (a host's poll carrying its counters, answered
 * like `GET …/ruleset`) and `GET /v1/services/:service/fleet` (what the fleet reported).
 */
export function reportRoutes(app: FastifyInstance, options: ReportRoutesOptions): void {
  const { repository, fleet } = options
  const { reader } = accessChecks(options.tokens, options.requireReadToken)

  const serviceParam = (params: ServiceParams): string => {
    if (!SERVICE_NAME.test(params.service)) throw unknownService(params.service)
    return params.service
  }

  // The poll itself carries the report, so a host makes one request per interval: same
  // auth as the poll, same ETag answer (304 when its rules are current).
  app.post<{ Params: ServiceParams }>('/v1/services/:service/report', async (request, reply) => {
    const service = serviceParam(request.params)
    reader(request, reply, service)
    let report
    try {
      report = parseHostReport(request.body)
    } catch (err) {
      if (err instanceof ReportError)
        throw new ProblemError('bad-request', err.message, { errors: err.issues })
      throw err
    }
    const version = await repository.version(service)
    if (version === undefined) throw unknownService(service)
    fleet.add(service, report)
    reply.header('cache-control', 'no-cache')
    if (noneMatchHits(request.headers['if-none-match'], version)) {
      return reply.code(304).header('etag', etagOf(version)).send()
    }
    // The ETag of the set sent, read with it: a write committed since the version was read
    // is in the body, and an ETag of the state before would name a set the host never got.
    const set = await repository.ruleset(service)
    return reply.header('etag', etagOf(set.version)).send(set)
  })

  app.get<{ Params: ServiceParams }>('/v1/services/:service/fleet', async (request, reply) => {
    const service = serviceParam(request.params)
    reader(request, reply, service)
    const set = await repository.ruleset(service)
    const view = fleet.view(service)
    const shadow = new Map(set.rules.map((r) => [r.id, r.shadow === true]))
    const reported = new Set(view.rules.map((r) => r.id))
    return reply.header('cache-control', 'no-store').send({
      service,
      revision: set.revision,
      version: set.version,
      ...view,
      rules: view.rules.map((r) => ({ ...r, shadow: shadow.get(r.id) ?? null })),
      // Rules in force that no host reported on in the history.
      silentRules: set.rules.map((r) => r.id).filter((id) => !reported.has(id)),
    })
  })
}
