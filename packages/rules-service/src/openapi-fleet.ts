/**
 * The OpenAPI parts of the fleet report routes (`POST …/report`, `GET …/fleet`), spliced into
 * the document by openapi.ts, which hands over its helpers.
 */
import { REPORT_COUNTS, REPORT_LIMITS } from './fleet-report-body.js'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** What openapi.ts shares with this file. */
export interface OpenApiHelpers {
  ref(name: string): Json
  problem(description: string): Json
  json(schema: Json, description: string, headers?: Json): Json
  etag: Json
  serviceParam: Json
  ifNoneMatch: Json
  common: Record<string, Json>
}

const counts = (description: string): Json => ({
  type: 'object',
  description,
  additionalProperties: false,
  properties: Object.fromEntries(
    REPORT_COUNTS.map((name) => [
      name,
      { type: 'integer', minimum: 0, maximum: REPORT_LIMITS.count },
    ]),
  ),
})

const client: Json = {
  type: 'object',
  required: ['client', 'count'],
  additionalProperties: false,
  properties: {
    client: {
      type: 'string',
      minLength: 1,
      maxLength: REPORT_LIMITS.clientLength,
      description:
        '`sha256:` and 16 hex digits of the salted key, or the key if the host shows keys in clear',
    },
    count: { type: 'integer', minimum: 0, maximum: REPORT_LIMITS.count },
  },
}

/**
 * @param h - the document's helpers
 * @returns the paths and the component schemas of the fleet routes
 */
export function fleetOpenApi(h: OpenApiHelpers): {
  paths: Record<string, Json>
  schemas: Record<string, Json>
} {
  return {
    paths: {
      '/v1/services/{service}/report': {
        post: {
          summary: "A host's poll carrying its report; answered like GET …/ruleset",
          description:
            'Hosts created with `httpRules(url, { report: true })` poll with this instead of `GET …/ruleset`: one request per interval carries their counters and top refused clients since their previous accepted report, and gets the rules (or 304). Same token as the poll.',
          parameters: [h.serviceParam, h.ifNoneMatch],
          requestBody: {
            required: true,
            content: { 'application/json': { schema: h.ref('HostReport') } },
          },
          responses: {
            '200': h.json(h.ref('Ruleset'), 'Report recorded; the rule set', h.etag),
            '304': { description: 'Report recorded; the set is unchanged' },
            ...h.common,
            '400': h.problem(
              'The report is malformed or past its bounds (the detail names the field)',
            ),
            '413': h.problem('Body larger than the limit'),
            '415': h.problem('Body is not JSON'),
          },
        },
      },
      '/v1/services/{service}/fleet': {
        get: {
          summary: 'What the hosts reported, as a short history per rule',
          parameters: [h.serviceParam],
          responses: { '200': h.json(h.ref('FleetView'), 'The history'), ...h.common },
        },
      },
    },
    schemas: {
      HostReport: {
        type: 'object',
        required: ['host', 'intervalMs', 'rules'],
        additionalProperties: false,
        properties: {
          host: {
            type: 'string',
            pattern: `^[A-Za-z0-9][A-Za-z0-9._:@-]{0,${REPORT_LIMITS.hostLength - 1}}$`,
            description: 'The reporting process',
          },
          intervalMs: {
            type: 'integer',
            minimum: 1,
            maximum: REPORT_LIMITS.intervalMs,
            description:
              "Milliseconds the counts cover (since the host's previous accepted report)",
          },
          rules: {
            type: 'array',
            maxItems: REPORT_LIMITS.rules,
            items: {
              type: 'object',
              required: ['id'],
              additionalProperties: false,
              properties: {
                id: { type: 'string', minLength: 1, maxLength: REPORT_LIMITS.ruleIdLength },
                counts: counts('Decisions since the previous report (missing: 0)'),
                top: { type: 'array', maxItems: REPORT_LIMITS.top, items: client },
              },
            },
          },
        },
      },
      FleetView: {
        type: 'object',
        properties: {
          service: { type: 'string' },
          revision: { type: 'integer' },
          version: { type: 'string' },
          bucketMs: { type: 'integer' },
          windowMs: { type: 'integer' },
          times: {
            type: 'array',
            items: { type: 'integer' },
            description: 'Start of each complete bucket (ms since the epoch), oldest first',
          },
          hosts: {
            type: 'array',
            items: {
              type: 'object',
              properties: { host: { type: 'string' }, lastSeen: { type: 'integer' } },
            },
          },
          hostCount: { type: 'integer' },
          droppedRules: { type: 'integer' },
          silentRules: { type: 'array', items: { type: 'string' } },
          rules: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                id: { type: 'string' },
                shadow: { type: ['boolean', 'null'], description: 'null: not in the rule set' },
                totals: counts('Decisions over the whole history'),
                perSecond: {
                  type: 'object',
                  description: 'Per count, decisions per second in each bucket of `times`',
                  properties: Object.fromEntries(
                    REPORT_COUNTS.map((name) => [
                      name,
                      { type: 'array', items: { type: 'number' } },
                    ]),
                  ),
                },
                top: { type: 'array', items: client },
              },
            },
          },
        },
      },
    },
  }
}
