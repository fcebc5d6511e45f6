import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { canRead, type Principal, type TokenRegistry } from '../auth.js'
import { accessChecks } from './access.js'
import {
  etagOf,
  noneMatchHits,
  preconditionFailure,
  writeConditions,
  type WriteConditions,
} from '../etag.js'
import { ProblemError } from '../problem.js'
import { showValue } from '../show-value.js'
import { SERVICE_NAME } from '../service-name.js'
import { unknownService } from '../unknown-service.js'
import type { Change, RuleBody, RulesRepository, RulesValidator } from '../rules-repository.js'

/** What the API routes need from the service. */
export interface RulesRoutesOptions {
  repository: RulesRepository
  tokens: TokenRegistry
  validate: RulesValidator
  requireReadToken: boolean
}

interface ServiceParams {
  service: string
}
interface RuleParams extends ServiceParams {
  id: string
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

/** Register the `/v1` API. */
export function rulesRoutes(app: FastifyInstance, options: RulesRoutesOptions): void {
  const { repository, tokens, validate, requireReadToken } = options

  // --- auth -----------------------------------------------------------------------------------

  const { reader, writer } = accessChecks(tokens, requireReadToken)

  // --- body checks ----------------------------------------------------------------------------

  /**
   * Validate one rule on its own first, so the errors name its fields, not its position. Every
   * problem is named in one answer, the id differing from the URL's included: a client fixing
   * one field at a time would otherwise need a round trip per field.
   */
  const checkRule = (body: unknown, id?: string): RuleBody => {
    if (!isObject(body)) {
      const issue = `body: expected a JSON object (one rule), got ${showValue(body)}`
      throw new ProblemError('bad-request', issue, { errors: [issue] })
    }
    const rule = id !== undefined && body.id === undefined ? { ...body, id } : body
    const issues = [...validate([rule])]
    const idNamed = issues.some((i) => i.startsWith('rules[0].id'))
    if (typeof rule.id !== 'string' && !idNamed) issues.unshift('rules[0].id: expected a string')
    if (id !== undefined && typeof rule.id === 'string' && rule.id !== id) {
      issues.unshift(
        `rules[0].id: the body's id ${JSON.stringify(rule.id)} differs from the URL's ${JSON.stringify(id)}; ids cannot be changed (delete and create instead)`,
      )
    }
    if (issues.length > 0)
      throw new ProblemError('invalid-rules', issues.join('; '), { errors: issues })
    return rule as RuleBody
  }

  const serviceParam = (params: ServiceParams): string => {
    if (!SERVICE_NAME.test(params.service)) {
      throw unknownService(params.service)
    }
    return params.service
  }

  // One line per change, for operators; the audit trail holds the bodies.
  const logChange = (
    request: FastifyRequest,
    service: string,
    principal: Principal,
    change: Change,
    action: string,
    ruleId: string,
  ): void => {
    if (!change.changed) return
    request.log.info(
      { service, ruleId, action, actor: principal.name, revision: change.revision },
      'rules changed',
    )
  }

  /** A write's preconditions: `If-Match` and `If-None-Match` (RFC 9110 §13.1). */
  const conditionsOf = (request: FastifyRequest): WriteConditions =>
    writeConditions(request.headers['if-match'], request.headers['if-none-match'])

  const sendWithEtag = (reply: FastifyReply, version: string, status = 200): FastifyReply =>
    reply.code(status).header('etag', etagOf(version)).header('cache-control', 'no-cache')

  /** Answer 304 when the client's copy is current; true when it did. */
  const notModified = (request: FastifyRequest, reply: FastifyReply, version: string): boolean => {
    if (!noneMatchHits(request.headers['if-none-match'], version)) return false
    void sendWithEtag(reply, version, 304).send()
    return true
  }

  /** What a write answers: the set's new revision and version. */
  const versionFields = (change: Change) => ({
    revision: change.revision,
    version: change.version,
  })

  // --- services -------------------------------------------------------------------------------

  app.get('/v1/services', async (request, reply) => {
    const principal = reader(request, reply, '')
    const list = await repository.listServices()
    return {
      services: list.filter(
        (s) => !requireReadToken || principal === undefined || canRead(principal, s.name),
      ),
    }
  })

  app.get<{ Params: ServiceParams }>('/v1/services/:service', async (request, reply) => {
    const service = serviceParam(request.params)
    reader(request, reply, service)
    const summary = (await repository.listServices()).find((s) => s.name === service)
    if (summary === undefined) {
      throw unknownService(service)
    }
    return sendWithEtag(reply, summary.version).send(summary)
  })

  app.put<{ Params: ServiceParams }>('/v1/services/:service', async (request, reply) => {
    const principal = writer(request, reply, request.params.service)
    if (principal.role !== 'admin')
      throw new ProblemError('forbidden', 'only an admin token creates services')
    if (!SERVICE_NAME.test(request.params.service)) {
      throw new ProblemError(
        'bad-request',
        `service names are 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit; got ${JSON.stringify(request.params.service)}`,
      )
    }
    // Its preconditions hold as on any write (RFC 9110 §13.1): `If-Match` asks for a service
    // that exists (in that state), `If-None-Match: *` for one that does not yet, so a script
    // that may only create, or only confirm, never does the other.
    const conditions = conditionsOf(request)
    const conditional = conditions.ifMatch !== undefined || conditions.ifNoneMatch !== undefined
    const before = conditional ? await repository.version(request.params.service) : undefined
    const refuse = (why: string, version: string | undefined): ProblemError =>
      new ProblemError(
        'precondition-failed',
        `service ${JSON.stringify(request.params.service)}: ${why}; nothing was written${version === undefined ? ' (it does not exist)' : ` (it is at ${etagOf(version)})`}`,
        version === undefined ? {} : { version },
      )
    if (conditional) {
      const failure =
        before === undefined
          ? conditions.ifMatch !== undefined
            ? 'If-Match asks for a service that exists'
            : undefined
          : preconditionFailure(conditions, before, true)
      if (failure !== undefined) throw refuse(failure, before)
    }
    const created = await repository.ensureService(request.params.service)
    // Created by someone else between the check and the insert: `If-None-Match: *` fails.
    if (!created && before === undefined && conditions.ifNoneMatch === '*') {
      const now = await repository.version(request.params.service)
      throw refuse('If-None-Match: * asks for a service that does not exist yet', now)
    }
    const set = await repository.ruleset(request.params.service)
    return sendWithEtag(reply, set.version, created ? 201 : 200).send({
      service: set.service,
      revision: set.revision,
      version: set.version,
      created,
    })
  })

  // --- whole set ------------------------------------------------------------------------------

  const getSet = async (
    request: FastifyRequest<{ Params: ServiceParams }>,
    reply: FastifyReply,
  ) => {
    const service = serviceParam(request.params)
    reader(request, reply, service)
    // The poll path: a current client costs one indexed lookup, never the rules themselves.
    const version = await repository.version(service)
    if (version === undefined) throw unknownService(service)
    if (notModified(request, reply, version)) return reply
    const set = await repository.ruleset(service)
    return sendWithEtag(reply, set.version).send(set)
  }
  app.get<{ Params: ServiceParams }>('/v1/services/:service/ruleset', getSet)
  app.get<{ Params: ServiceParams }>('/v1/services/:service/rules', getSet)

  app.put<{ Params: ServiceParams }>('/v1/services/:service/rules', async (request, reply) => {
    const service = serviceParam(request.params)
    const principal = writer(request, reply, service)
    const body = request.body
    if (!isObject(body)) {
      const issue = `body: expected a JSON object { "rules": [ … ] }, got ${showValue(body)}`
      throw new ProblemError('bad-request', issue, { errors: [issue] })
    }
    // Every problem of the body in one answer: the envelope's fields, then each rule's.
    const envelope: string[] = []
    const extra = Object.keys(body).filter(
      (k) => k !== 'rules' && k !== 'service' && k !== 'revision' && k !== 'version',
    )
    if (extra.length > 0)
      envelope.push(
        `unknown field(s) ${extra.map((k) => JSON.stringify(k)).join(', ')}; expected { "rules": [ … ] }`,
      )
    if (!Array.isArray(body.rules))
      envelope.push(`rules: expected an array of rule objects, got ${showValue(body.rules)}`)
    if (body.service !== undefined && body.service !== service) {
      envelope.push(
        `service: the body is for service ${JSON.stringify(body.service)}, the URL for ${JSON.stringify(service)}`,
      )
    }
    // A set read with GET carries its version: sending it back makes the write conditional,
    // like If-Match, which wins when both are present, `If-Match: *` (any version) included.
    if (body.version !== undefined && typeof body.version !== 'string') {
      envelope.push(`version: expected a string, got ${JSON.stringify(body.version)}`)
    }
    const header = request.headers['if-match']
    // A revision alone cannot condition a write: it starts over when the data is lost, so it
    // could match another set. Refused rather than ignored, which would write unconditionally.
    if (header === undefined && body.version === undefined && body.revision !== undefined) {
      envelope.push(
        'revision: a revision alone cannot make a write conditional (revisions start over when the data is lost); send the set as read, with its "version", or an If-Match header with its ETag — or leave both out to write unconditionally',
      )
    }
    // Core's schema names each element that is not a rule object by its index.
    const ruleIssues = Array.isArray(body.rules) ? validate(body.rules as unknown[]) : []
    if (envelope.length > 0 || ruleIssues.length > 0) {
      const issues = [...envelope, ...ruleIssues]
      throw new ProblemError(
        envelope.length > 0 ? 'bad-request' : 'invalid-rules',
        issues.join('; '),
        {
          errors: issues,
        },
      )
    }
    const fromHeaders = conditionsOf(request)
    const conditions: WriteConditions =
      header !== undefined || body.version === undefined
        ? fromHeaders
        : { ...fromHeaders, ifMatch: [`"${body.version as string}"`] }
    const rules = body.rules as unknown[]
    const change = await repository.replaceAll(
      service,
      rules as RuleBody[],
      principal.name,
      conditions,
    )
    logChange(request, service, principal, change, 'replace-all', '*')
    return sendWithEtag(reply, change.version).send({
      service,
      ...versionFields(change),
      rules,
      changed: change.changed,
    })
  })

  // --- one rule -------------------------------------------------------------------------------

  app.post<{ Params: ServiceParams }>('/v1/services/:service/rules', async (request, reply) => {
    const service = serviceParam(request.params)
    const principal = writer(request, reply, service)
    const rule = checkRule(request.body)
    const change = await repository.create(service, rule, principal.name, conditionsOf(request))
    logChange(request, service, principal, change, 'create', rule.id)
    return sendWithEtag(reply, change.version, 201)
      .header(
        'location',
        `/v1/services/${encodeURIComponent(service)}/rules/${encodeURIComponent(rule.id)}`,
      )
      .send({ service, ...versionFields(change), rule })
  })

  app.get<{ Params: RuleParams }>('/v1/services/:service/rules/:id', async (request, reply) => {
    const service = serviceParam(request.params)
    reader(request, reply, service)
    const { revision, version, rule } = await repository.rule(service, request.params.id)
    if (notModified(request, reply, version)) return reply
    return sendWithEtag(reply, version).send({ service, revision, version, rule })
  })

  app.put<{ Params: RuleParams }>('/v1/services/:service/rules/:id', async (request, reply) => {
    const service = serviceParam(request.params)
    const principal = writer(request, reply, service)
    const rule = checkRule(request.body, request.params.id)
    const change = await repository.replace(
      service,
      rule.id,
      rule,
      principal.name,
      conditionsOf(request),
    )
    logChange(request, service, principal, change, change.created ? 'create' : 'replace', rule.id)
    return sendWithEtag(reply, change.version, change.created ? 201 : 200).send({
      service,
      ...versionFields(change),
      rule,
    })
  })

  app.patch<{ Params: RuleParams }>('/v1/services/:service/rules/:id', async (request, reply) => {
    const service = serviceParam(request.params)
    const principal = writer(request, reply, service)
    if (!isObject(request.body)) {
      const issue = `body: expected a JSON merge patch (an object), got ${showValue(request.body)}`
      throw new ProblemError('bad-request', issue, { errors: [issue] })
    }
    let patched: RuleBody | undefined
    const change = await repository.patch(
      service,
      request.params.id,
      request.body,
      principal.name,
      conditionsOf(request),
      (candidate) => (patched = checkRule(candidate, request.params.id)),
    )
    logChange(request, service, principal, change, 'patch', request.params.id)
    return sendWithEtag(reply, change.version).send({
      service,
      ...versionFields(change),
      rule: patched,
    })
  })

  app.delete<{ Params: RuleParams }>('/v1/services/:service/rules/:id', async (request, reply) => {
    const service = serviceParam(request.params)
    const principal = writer(request, reply, service)
    const change = await repository.delete(
      service,
      request.params.id,
      principal.name,
      conditionsOf(request),
    )
    logChange(request, service, principal, change, 'delete', request.params.id)
    return sendWithEtag(reply, change.version).send({
      service,
      ...versionFields(change),
      deleted: request.params.id,
    })
  })

  // --- audit ----------------------------------------------------------------------------------

  app.get<{ Params: ServiceParams; Querystring: Record<string, string | undefined> }>(
    '/v1/services/:service/audit',
    async (request, reply) => {
      const service = serviceParam(request.params)
      reader(request, reply, service)
      const q = request.query
      // Every parameter at fault is named in one answer.
      const issues: string[] = []
      const int = (name: string, max: number): number | undefined => {
        const raw = q[name]
        if (raw === undefined) return undefined
        // Decimal digits only: Number() also reads ' 1', '0x10', '1e3' and '1.0', so a cursor
        // or a page size spelled some other way would be taken as a number nobody wrote.
        const n = /^\d{1,16}$/.test(raw) ? Number(raw) : NaN
        if (!Number.isInteger(n) || n < 1 || n > max) {
          issues.push(`${name}: expected an integer from 1 to ${max}, got ${JSON.stringify(raw)}`)
          return undefined
        }
        return n
      }
      const unknown = Object.keys(q).filter((k) => !['limit', 'before', 'rule'].includes(k))
      if (unknown.length > 0)
        issues.push(
          `unknown query parameter(s): ${unknown.join(', ')} (expected limit, before, rule)`,
        )
      const limit = int('limit', 500)
      const before = int('before', Number.MAX_SAFE_INTEGER)
      // No rule has an empty id: `?rule=` is a filter gone wrong (an unset variable), and
      // answering it with an empty trail would read as "nobody changed this rule".
      if (q.rule === '') issues.push('rule: expected a rule id, got ""')
      if (issues.length > 0)
        throw new ProblemError('bad-request', issues.join('; '), { errors: issues })
      const entries = await repository.audit(service, {
        ...(limit !== undefined ? { limit } : {}),
        ...(before !== undefined ? { before } : {}),
        ...(q.rule !== undefined ? { ruleId: q.rule } : {}),
      })
      return { service, entries }
    },
  )
}
