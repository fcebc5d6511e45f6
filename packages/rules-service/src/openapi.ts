/**
 * The OpenAPI 3.1 description served at `/openapi.json`, written by hand next to the routes
 * it describes. A rule's own schema is the JSON Schema core publishes beside its rule checks,
 * so the document and the validation are kept in step in one place.
 */
import { ruleSchema } from '@floodgate/core/rules'
import { fleetOpenApi } from './openapi-fleet.js'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` })
const problem = (description: string): Json => ({
  description,
  content: { 'application/problem+json': { schema: ref('Problem') } },
})
const json = (schema: Json, description: string, headers?: Json): Json => ({
  description,
  content: { 'application/json': { schema } },
  ...(headers ? { headers } : {}),
})
const etag: Json = {
  ETag: {
    description:
      'The set\'s version in quotes, e.g. `"7-9c1f…"`: opaque, never reused, even when the data is lost and revisions start over',
    schema: { type: 'string' },
  },
}

const serviceParam: Json = {
  name: 'service',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$' },
  description: 'The application that enforces the rules',
}
const idParam: Json = { name: 'id', in: 'path', required: true, schema: { type: 'string' } }
const ifNoneMatch: Json = {
  name: 'If-None-Match',
  in: 'header',
  schema: { type: 'string' },
  description: 'An ETag from an earlier read; 304 when the set has not changed since',
}
const ifMatch: Json = {
  name: 'If-Match',
  in: 'header',
  schema: { type: 'string' },
  description:
    "The ETag the change is based on; 412 when the set changed in between. `*`: 412 unless the URL's rule (or, for the set, the service) exists",
}
const writeIfNoneMatch: Json = {
  name: 'If-None-Match',
  in: 'header',
  schema: { type: 'string' },
  description:
    "`*`: 412 when the URL's rule exists (the set always does), so a PUT only creates; ETags: 412 when the set is in one of those states. Ignored when If-Match is given",
}
const common = {
  '400': problem(
    'Malformed JSON, unknown fields or an invalid rule (`errors` lists `path: message`)',
  ),
  '401': problem('Missing or unknown bearer token'),
  '403': problem('The token may not do this for this service'),
  '404': problem('Unknown service or rule'),
}
const writeErrors = {
  ...common,
  '409': problem('A rule with this id exists'),
  '412': problem(
    "If-Match (or the body's version) did not name the current state of the set, or If-None-Match did",
  ),
  '413': problem('Body larger than the limit'),
  '415': problem('Body is not JSON'),
}
const ruleResponse = (description: string): Json =>
  json(
    {
      type: 'object',
      required: ['service', 'revision', 'version', 'rule'],
      properties: {
        service: { type: 'string' },
        revision: { type: 'integer' },
        version: { type: 'string' },
        rule: ref('Rule'),
      },
    },
    description,
    etag,
  )

const RULE_DESCRIPTION =
  "A rule as core's schema accepts it (RuleInput; see docs/rules.md). Durations are strings like '10s' or milliseconds; core's validation is the authority (e.g. ids are unique within a set, rate excludes limit and window)."

/** Core's JSON Schema of a rule (draft 2020-12, which OpenAPI 3.1 uses). */
function ruleJsonSchema(): Json {
  // A fresh copy on each call, so it is ours to change; the document states its dialect once.
  const schema = ruleSchema.toJSONSchema() as { [key: string]: Json }
  delete schema.$schema
  return { ...schema, description: RULE_DESCRIPTION }
}

/**
 * @returns the OpenAPI 3.1 document of the `/v1` API
 */
export function openApiDocument(): Json {
  const fleet = fleetOpenApi({ ref, problem, json, etag, serviceParam, ifNoneMatch, common })
  return {
    openapi: '3.1.0',
    info: {
      title: 'Floodgate rules service',
      version: '1',
      description:
        "Service owners manage rate-limiting rules; hosts poll `GET /v1/services/{service}/ruleset` with If-None-Match. Every change bumps the service's revision and draws a new version (`<revision>-<random tag>`); the ETag is the version in quotes.",
    },
    security: [{ bearer: [] }],
    paths: {
      '/v1/me': {
        get: {
          summary: 'Who the bearer token is, and what it may change',
          description:
            'Without a token: every field null (read-only). `services` null means every service.',
          responses: {
            '200': json(
              {
                type: 'object',
                required: ['name', 'role', 'services'],
                properties: {
                  name: { type: ['string', 'null'] },
                  role: { enum: ['admin', 'write', 'read', null] },
                  services: { type: ['array', 'null'], items: { type: 'string' } },
                },
              },
              'The token',
            ),
            '401': common['401'],
          },
        },
      },
      '/v1/services': {
        get: {
          summary: 'List services',
          responses: {
            '200': json(
              {
                type: 'object',
                properties: { services: { type: 'array', items: ref('ServiceSummary') } },
              },
              'Services the token may read',
            ),
            '401': common['401'],
          },
        },
      },
      '/v1/services/{service}': {
        get: {
          summary: 'One service: revision and rule count',
          parameters: [serviceParam],
          responses: { '200': json(ref('ServiceSummary'), 'The service', etag), ...common },
        },
        put: {
          summary: 'Create a service (admin token)',
          parameters: [
            serviceParam,
            {
              name: 'If-Match',
              in: 'header',
              schema: { type: 'string' },
              description: '`*` or an ETag: 412 unless the service exists (in that state)',
            },
            {
              name: 'If-None-Match',
              in: 'header',
              schema: { type: 'string' },
              description:
                '`*`: 412 when the service exists, so only one caller creates it. Ignored when If-Match is given',
            },
          ],
          responses: {
            '200': json(ref('ServiceCreated'), 'It existed already'),
            '201': json(ref('ServiceCreated'), 'Created with an empty set'),
            '400': common['400'],
            '401': common['401'],
            '403': common['403'],
            '412': problem('If-Match or If-None-Match did not hold; nothing was created'),
          },
        },
      },
      '/v1/services/{service}/ruleset': {
        get: {
          summary: 'The whole set (what hosts poll)',
          parameters: [serviceParam, ifNoneMatch],
          responses: {
            '200': json(ref('Ruleset'), 'The set, in order', etag),
            '304': { description: 'Not modified since the ETag in If-None-Match' },
            ...common,
          },
        },
      },
      '/v1/services/{service}/rules': {
        get: {
          summary: 'List rules (same body as /ruleset)',
          parameters: [serviceParam, ifNoneMatch],
          responses: {
            '200': json(ref('Ruleset'), 'The set', etag),
            '304': { description: 'Not modified' },
            ...common,
          },
        },
        post: {
          summary: 'Create a rule (appended)',
          parameters: [serviceParam, ifMatch, writeIfNoneMatch],
          requestBody: { required: true, content: { 'application/json': { schema: ref('Rule') } } },
          responses: { '201': ruleResponse('Created'), ...writeErrors },
        },
        put: {
          summary: 'Replace the whole set (rules absent from the body are deleted)',
          parameters: [serviceParam, ifMatch, writeIfNoneMatch],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['rules'],
                  properties: {
                    rules: { type: 'array', items: ref('Rule') },
                    service: { type: 'string', description: "Must be the URL's, when given" },
                    version: {
                      type: 'string',
                      description:
                        'The version the set was read at: makes the write conditional, like If-Match',
                    },
                    revision: {
                      type: 'integer',
                      description: 'Ignored with `version`; alone it is refused (400)',
                    },
                  },
                },
              },
            },
          },
          responses: { '200': json(ref('Ruleset'), 'The new set', etag), ...writeErrors },
        },
      },
      '/v1/services/{service}/rules/{id}': {
        get: {
          summary: 'Get a rule',
          parameters: [serviceParam, idParam, ifNoneMatch],
          responses: {
            '200': ruleResponse('The rule'),
            '304': { description: 'Not modified' },
            ...common,
          },
        },
        put: {
          summary: 'Replace (or create) a rule',
          parameters: [serviceParam, idParam, ifMatch, writeIfNoneMatch],
          requestBody: { required: true, content: { 'application/json': { schema: ref('Rule') } } },
          responses: {
            '200': ruleResponse('Replaced'),
            '201': ruleResponse('Created'),
            ...writeErrors,
          },
        },
        patch: {
          summary:
            'Change some fields of a rule (JSON merge patch, RFC 7396: null deletes a field)',
          parameters: [serviceParam, idParam, ifMatch, writeIfNoneMatch],
          requestBody: {
            required: true,
            content: {
              'application/merge-patch+json': { schema: { type: 'object' } },
              'application/json': { schema: { type: 'object' } },
            },
          },
          responses: { '200': ruleResponse('Patched'), ...writeErrors },
        },
        delete: {
          summary: 'Delete a rule',
          parameters: [serviceParam, idParam, ifMatch, writeIfNoneMatch],
          responses: {
            '200': json(
              {
                type: 'object',
                properties: {
                  service: { type: 'string' },
                  revision: { type: 'integer' },
                  version: { type: 'string' },
                  deleted: { type: 'string' },
                },
              },
              'Deleted',
              etag,
            ),
            ...common,
            '412': writeErrors['412'],
          },
        },
      },
      '/v1/services/{service}/audit': {
        get: {
          summary: 'The audit trail, newest first',
          parameters: [
            serviceParam,
            {
              name: 'limit',
              in: 'query',
              schema: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
            },
            {
              name: 'before',
              in: 'query',
              schema: { type: 'integer' },
              description: 'Entries with a smaller id (paging)',
            },
            {
              name: 'rule',
              in: 'query',
              schema: { type: 'string' },
              description: 'Only this rule id',
            },
          ],
          responses: {
            '200': json(
              {
                type: 'object',
                properties: {
                  service: { type: 'string' },
                  entries: { type: 'array', items: ref('AuditEntry') },
                },
              },
              'Entries',
            ),
            ...common,
          },
        },
      },
      ...fleet.paths,
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Rule: ruleJsonSchema(),
        ...fleet.schemas,
        Ruleset: {
          type: 'object',
          required: ['service', 'revision', 'version', 'rules'],
          properties: {
            service: { type: 'string' },
            revision: {
              type: 'integer',
              description: 'Bumped by every change; starts over at 0 if the data is lost',
            },
            version: {
              type: 'string',
              description: 'This state of the set, never reused: the ETag without its quotes',
            },
            rules: { type: 'array', items: ref('Rule') },
          },
        },
        ServiceSummary: {
          type: 'object',
          properties: {
            name: { type: 'string' },
            revision: { type: 'integer' },
            version: { type: 'string' },
            rules: { type: 'integer' },
            updatedAt: { type: 'string', format: 'date-time' },
          },
        },
        ServiceCreated: {
          type: 'object',
          properties: {
            service: { type: 'string' },
            revision: { type: 'integer' },
            version: { type: 'string' },
            created: { type: 'boolean' },
          },
        },
        AuditEntry: {
          type: 'object',
          properties: {
            id: { type: 'integer' },
            service: { type: 'string' },
            ruleId: { type: ['string', 'null'] },
            actor: { type: 'string', description: 'The name of the token that made the change' },
            action: { enum: ['create', 'replace', 'patch', 'delete', 'reorder'] },
            revision: { type: 'integer' },
            before: {
              oneOf: [ref('Rule'), { type: 'array', items: { type: 'string' } }, { type: 'null' }],
              description: 'The rule before, or the rule ids in their old order (reorder)',
            },
            after: {
              oneOf: [ref('Rule'), { type: 'array', items: { type: 'string' } }, { type: 'null' }],
              description: 'The rule after, or the rule ids in their new order (reorder)',
            },
            at: { type: 'string', format: 'date-time' },
          },
        },
        Problem: {
          type: 'object',
          required: ['type', 'title', 'status', 'detail'],
          properties: {
            type: { type: 'string', format: 'uri' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            errors: {
              type: 'array',
              items: { type: 'string' },
              description: 'Each invalid field as `path: message`',
            },
            revision: { type: 'integer', description: 'The current revision (412)' },
            version: { type: 'string', description: 'The current version (412)' },
          },
        },
      },
    },
  }
}
