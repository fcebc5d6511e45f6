import { describe, expect, it } from 'vitest'
import { RulesValidationError } from '../errors.js'
import type { Rule, RuleMatch } from './rule.js'
import { parseRule, parseRules, ruleSchema, rulesSchema } from './schema.js'
import { parseRulesDocument } from './schema-document.js'

function issuesOf(input: unknown): readonly string[] {
  try {
    parseRules(input)
  } catch (e) {
    expect(e).toBeInstanceOf(RulesValidationError)
    return (e as RulesValidationError).issues
  }
  throw new Error('expected the rules to be refused')
}

const base = { id: 'r', limit: 10, window: '1s' }

describe('parseRules: defaults and normalisation', () => {
  it('fills every default', () => {
    expect(parseRules([{ id: 'api', limit: 10, window: '10s' }])).toEqual([
      {
        id: 'api',
        description: undefined,
        match: {},
        key: ['ip'],
        fallbackKey: 'ip',
        algorithm: 'token-bucket',
        limit: 10,
        windowMs: 10_000,
        burst: 10,
        cost: 1,
        onLimit: { action: 'reject', status: 429 },
        shadow: false,
        count: 'all',
      } satisfies Rule,
    ])
  })

  it.each<[string, Record<string, unknown>, Partial<Rule>]>([
    ['rate per second', { id: 'r', rate: '10/s' }, { limit: 10, windowMs: 1000 }],
    ['rate with a count', { id: 'r', rate: '100/1m' }, { limit: 100, windowMs: 60_000 }],
    ['rate in ms', { id: 'r', rate: '5/250ms' }, { limit: 5, windowMs: 250 }],
    ['window as a number', { ...base, window: 1500 }, { windowMs: 1500 }],
    ['fractional window', { ...base, window: '1.5s' }, { windowMs: 1500 }],
    ['burst', { ...base, burst: 25 }, { burst: 25 }],
    ['burst defaults to limit on gcra', { ...base, algorithm: 'gcra' }, { burst: 10 }],
    ['fixed window burst is the limit', { ...base, algorithm: 'fixed-window' }, { burst: 10 }],
    ['cost', { ...base, cost: 2.5 }, { cost: 2.5 }],
    ['shadow', { ...base, shadow: true }, { shadow: true }],
    ['description', { ...base, description: 'x' }, { description: 'x' }],
    [
      'fallbackKey',
      { ...base, key: 'user', fallbackKey: 'skip' },
      { key: ['user'], fallbackKey: 'skip' },
    ],
    [
      'match string with method',
      { ...base, match: 'post /export/' },
      { match: { methods: ['POST'], paths: ['/export'] } },
    ],
    [
      'match string with methods',
      { ...base, match: 'GET,head /users/:id' },
      { match: { methods: ['GET', 'HEAD'], paths: ['/users/:id'] } },
    ],
    ['match string path only', { ...base, match: '/api/**' }, { match: { paths: ['/api/**'] } }],
    [
      'match object',
      {
        ...base,
        match: {
          methods: ['get', 'Post'],
          paths: '/a',
          headers: { 'X-Api-Key': true, 'X-Tier': 'free' },
          hosts: ['API.example.com', '*.Example.org'],
        },
      },
      {
        match: {
          methods: ['GET', 'POST'],
          paths: ['/a'],
          headers: { 'x-api-key': true, 'x-tier': 'free' },
          hosts: ['api.example.com', '*.example.org'],
        },
      },
    ],
    ['empty match object', { ...base, match: {} }, { match: {} }],
    [
      'composite key',
      { ...base, key: ['user', 'header:X-Api-Key', 'custom:tenant'] },
      { key: ['user', 'header:x-api-key', 'custom:tenant'] },
    ],
    ['onLimit drop', { ...base, onLimit: 'drop' }, { onLimit: { action: 'drop' } }],
    [
      'onLimit reject',
      { ...base, onLimit: 'reject' },
      { onLimit: { action: 'reject', status: 429 } },
    ],
    [
      'onLimit 503',
      { ...base, onLimit: { action: 'reject', status: 503 } },
      { onLimit: { action: 'reject', status: 503 } },
    ],
    [
      'onLimit queue',
      { ...base, onLimit: { action: 'queue', maxWait: '2s' } },
      { onLimit: { action: 'queue', maxWaitMs: 2000, maxQueue: 100 } },
    ],
    [
      'onLimit queue with maxQueue',
      { ...base, onLimit: { action: 'queue', maxWait: 500, maxQueue: 7 } },
      { onLimit: { action: 'queue', maxWaitMs: 500, maxQueue: 7 } },
    ],
    [
      'concurrency without window',
      { id: 'c', algorithm: 'concurrency', limit: 3 },
      { algorithm: 'concurrency', limit: 3, windowMs: 0, burst: 3 },
    ],
    [
      'sliding log at its cap',
      { ...base, algorithm: 'sliding-window-log', limit: 10_000 },
      { limit: 10_000 },
    ],
    ['window at the timer limit', { ...base, window: 2 ** 31 - 1 }, { windowMs: 2 ** 31 - 1 }],
    [
      'bucket at the edge of its exact range',
      { ...base, limit: 1_000_000, window: 2 ** 31 - 1, burst: 524_288 },
      { burst: 524_288 },
    ],
    [
      'bucket of 2^50 units refilled by whole units per ms',
      { ...base, limit: 1000 * 2 ** 40, window: '1s', burst: 2 ** 50 },
      { burst: 2 ** 50 },
    ],
  ])('%s', (_name, input, expected) => {
    const [rule] = parseRules([input])
    expect(rule).toMatchObject(expected)
  })

  it('freezes its output', () => {
    const [rule] = parseRules([{ ...base, match: 'GET /a', key: ['ip', 'user'] }])
    expect(Object.isFrozen(rule)).toBe(true)
    expect(Object.isFrozen(rule!.match)).toBe(true)
    expect(Object.isFrozen((rule!.match as RuleMatch).paths)).toBe(true)
    expect(Object.isFrozen(rule!.key)).toBe(true)
  })

  it('accepts an empty set', () => {
    expect(parseRules([])).toEqual([])
  })
})

describe('parseRules: refusals name the path, the expectation and the value', () => {
  it.each<[string, unknown, string[]]>([
    ['not a list', { id: 'x' }, ['rules: expected a list of rules, got {"id":"x"}']],
    ['not an object', [5], ['rules[0]: expected a rule object, got 5']],
    [
      'negative limit',
      [{}, {}, { ...base, limit: -1 }].map((r, i) => ({ ...base, ...r, id: `r${i}` })),
      ['rules[2].limit: expected a positive integer, got -1'],
    ],
    [
      'fractional limit',
      [{ ...base, limit: 2.5 }],
      ['rules[0].limit: expected a positive integer, got 2.5'],
    ],
    [
      'string limit',
      [{ ...base, limit: '10' }],
      ['rules[0].limit: expected a positive integer, got "10"'],
    ],
    [
      'missing id',
      [{ limit: 1, window: '1s' }],
      [
        "rules[0].id: expected an id of 1-64 letters, digits, '.', '_' or '-', other than '.' and '..', got nothing",
      ],
    ],
    [
      'bad id',
      [{ ...base, id: 'a b' }],
      [
        `rules[0].id: expected an id of 1-64 letters, digits, '.', '_' or '-', other than '.' and '..', got "a b"`,
      ],
    ],
    [
      'an id that a URL path cannot carry',
      [{ ...base, id: '..' }],
      [
        `rules[0].id: expected an id of 1-64 letters, digits, '.', '_' or '-', other than '.' and '..', got ".."`,
      ],
    ],
    [
      'unknown field with a hint',
      [{ ...base, windw: '1s' }],
      ['rules[0].windw: expected a known field (did you mean "window"?), got "1s"'],
    ],
    [
      'unknown field',
      [{ ...base, colour: 'red' }],
      [
        'rules[0].colour: expected a known field (one of id, description, deny, allow, match, key, fallbackKey, limit, window, rate, algorithm, burst, cost, onLimit, shadow, ban, count, tiers, adaptive), got "red"',
      ],
    ],
    [
      'missing window',
      [{ id: 'r', limit: 5 }],
      [
        "rules[0].window: expected a duration like '500ms', '10s', '1m', '1h', '1d' or a positive whole number of milliseconds, got nothing",
      ],
    ],
    [
      'missing limit',
      [{ id: 'r', window: '1s' }],
      ['rules[0].limit: expected a positive integer, got nothing'],
    ],
    [
      'bad window',
      [{ ...base, window: '10x' }],
      [
        `rules[0].window: expected a duration like '500ms', '10s', '1m', '1h', '1d' or a positive whole number of milliseconds, got "10x"`,
      ],
    ],
    [
      'zero window',
      [{ ...base, window: 0 }],
      [
        "rules[0].window: expected a duration like '500ms', '10s', '1m', '1h', '1d' or a positive whole number of milliseconds, got 0",
      ],
    ],
    [
      'window over 2^31-1 ms',
      [{ ...base, window: '25d' }],
      [
        'rules[0].window: expected a duration of at most 2147483647 ms (about 24.8 days), got "25d"',
      ],
    ],
    [
      'bad rate',
      [{ id: 'r', rate: '10 per second' }],
      [`rules[0].rate: expected a rate like '10/s' or '100/1m', got "10 per second"`],
    ],
    [
      'rate and limit',
      [{ ...base, rate: '1/s' }],
      ['rules[0].rate: expected either rate, or limit and window, not both, got "1/s"'],
    ],
    [
      'unknown algorithm',
      [{ ...base, algorithm: 'magic' }],
      [
        "rules[0].algorithm: expected one of 'token-bucket', 'gcra', 'fixed-window', 'sliding-window-log', 'sliding-window-counter', 'leaky-bucket', 'concurrency', 'adaptive', got \"magic\"",
      ],
    ],
    [
      'burst on a window algorithm',
      [{ ...base, algorithm: 'fixed-window', burst: 5 }],
      [
        "rules[0].burst: expected no burst for algorithm 'fixed-window' (only token-bucket, gcra and leaky-bucket have one), got 5",
      ],
    ],
    ['zero burst', [{ ...base, burst: 0 }], ['rules[0].burst: expected a positive integer, got 0']],
    [
      'cost above capacity',
      [{ ...base, cost: 11 }],
      [
        "rules[0].cost: expected a cost of at most the rule's capacity (10); a dearer request could never pass, got 11",
      ],
    ],
    [
      'negative cost',
      [{ ...base, cost: -1 }],
      ['rules[0].cost: expected a positive number, got -1'],
    ],
    [
      // 1e6 per 2^31 - 1 ms (a prime) counts in steps of 1/2147483647 unit; 2^50 of them
      // are 524,288 units. Past that a balance is a float rounding, not a count.
      'bucket burst past its exact range (from the limit)',
      [{ ...base, limit: 1_000_000, window: 2 ** 31 - 1 }],
      [
        'rules[0].limit: expected a burst of at most 524288: token-bucket at 1000000 per 2147483647 ms counts in steps of 1/2147483647 unit, exact up to 2^50 steps, got 1000000',
      ],
    ],
    [
      'bucket burst past its exact range',
      [{ ...base, algorithm: 'gcra', limit: 7, window: '1d', burst: 2 ** 40 }],
      [
        'rules[0].burst: expected a burst of at most 13031248: gcra at 7 per 86400000 ms counts in steps of 1/86400000 unit, exact up to 2^50 steps, got 1099511627776',
      ],
    ],
    [
      'bucket queue wait past its exact range',
      [
        {
          ...base,
          algorithm: 'leaky-bucket',
          limit: 1e12,
          onLimit: { action: 'queue', maxWait: '1h' },
        },
      ],
      [
        "rules[0].onLimit.maxWait: expected a maxWait of at most 1124899 ms with a burst of 1000000000000: a queued request's debt adds maxWait of refill to the burst, and leaky-bucket at 1000000000000 per 1000 ms counts in steps of 1/1 unit, exact up to 2^50 steps, got 3600000",
      ],
    ],
    [
      'tier burst past its exact range',
      [
        {
          ...base,
          tiers: { by: 'user', values: { big: { limit: 3, window: '1d', burst: 2 ** 30 } } },
        },
      ],
      [
        'rules[0].tiers.values.big.burst: expected a burst of at most 39093746: token-bucket at 3 per 86400000 ms counts in steps of 1/28800000 unit, exact up to 2^50 steps, got 1073741824',
      ],
    ],
    [
      'sliding log above 10k',
      [{ ...base, algorithm: 'sliding-window-log', limit: 10_001 }],
      [
        'rules[0].limit: expected a limit of at most 10000 for sliding-window-log, which stores a timestamp per request (sliding-window-counter scales to any limit), got 10001',
      ],
    ],
    [
      'queue on concurrency',
      [
        {
          id: 'c',
          algorithm: 'concurrency',
          limit: 2,
          onLimit: { action: 'queue', maxWait: '1s' },
        },
      ],
      [
        "rules[0].onLimit.action: expected 'reject' or 'drop': algorithm 'concurrency' cannot reserve capacity, so it cannot queue, got \"queue\"",
      ],
    ],
    [
      'queue on sliding-window-counter',
      [
        {
          ...base,
          algorithm: 'sliding-window-counter',
          onLimit: { action: 'queue', maxWait: '1s' },
        },
      ],
      [
        "rules[0].onLimit.action: expected 'reject' or 'drop': algorithm 'sliding-window-counter' cannot reserve capacity, so it cannot queue, got \"queue\"",
      ],
    ],
    [
      'rate on concurrency',
      [{ id: 'c', algorithm: 'concurrency', rate: '1/s' }],
      [
        'rules[0].rate: expected no rate for algorithm \'concurrency\' (set limit: the requests in flight), got "1/s"',
      ],
    ],
    [
      'status',
      [{ ...base, onLimit: { action: 'reject', status: 500 } }],
      ['rules[0].onLimit.status: expected 429 or 503, got 500'],
    ],
    [
      'unknown action',
      [{ ...base, onLimit: { action: 'wait' } }],
      ["rules[0].onLimit.action: expected 'reject', 'queue' or 'drop', got \"wait\""],
    ],
    [
      'queue without maxWait',
      [{ ...base, onLimit: { action: 'queue' } }],
      [
        "rules[0].onLimit.maxWait: expected a duration like '500ms', '10s', '1m', '1h', '1d' or a positive whole number of milliseconds, got nothing",
      ],
    ],
    [
      'queue as a string',
      [{ ...base, onLimit: 'queue' }],
      [
        "rules[0].onLimit: expected 'reject', 'drop', or an object with action 'reject', 'queue' (with maxWait) or 'drop', got \"queue\"",
      ],
    ],
    [
      'unknown onLimit field',
      [{ ...base, onLimit: { action: 'drop', status: 503 } }],
      ['rules[0].onLimit.status: expected a known field (one of action), got 503'],
    ],
    [
      'maxWait over the timer limit',
      [{ ...base, onLimit: { action: 'queue', maxWait: 2 ** 31 } }],
      [
        'rules[0].onLimit.maxWait: expected a duration of at most 2147483647 ms (about 24.8 days), got 2147483648',
      ],
    ],
    [
      'bad key',
      [{ ...base, key: 'cookie' }],
      ["rules[0].key: expected 'ip', 'user', 'header:<name>' or 'custom:<name>', got \"cookie\""],
    ],
    [
      'bad key part in a list',
      [{ ...base, key: ['ip', 'header:'] }],
      [
        "rules[0].key[1]: expected 'ip', 'user', 'header:<name>' or 'custom:<name>', got \"header:\"",
      ],
    ],
    [
      'number in key list',
      [{ ...base, key: ['ip', 3] }],
      ["rules[0].key[1]: expected 'ip', 'user', 'header:<name>' or 'custom:<name>', got 3"],
    ],
    [
      'duplicate key part',
      [{ ...base, key: ['ip', 'ip'] }],
      ['rules[0].key[1]: expected each key part once, got "ip"'],
    ],
    [
      'empty key list',
      [{ ...base, key: [] }],
      [
        "rules[0].key: expected 'ip', 'user', 'header:<name>', 'custom:<name>' or a list of them (not empty), got []",
      ],
    ],
    [
      'bad fallbackKey',
      [{ ...base, fallbackKey: 'none' }],
      ["rules[0].fallbackKey: expected 'ip', 'skip' or 'shared', got \"none\""],
    ],
    [
      'shadow not boolean',
      [{ ...base, shadow: 'yes' }],
      ['rules[0].shadow: expected true or false, got "yes"'],
    ],
    [
      '** not last',
      [{ ...base, match: '/a/**/b' }],
      [`rules[0].match: expected a path pattern with '**' only as the last segment, got "/a/**/b"`],
    ],
    [
      'empty segment',
      [{ ...base, match: { paths: ['/ok', '/a//b'] } }],
      [
        `rules[0].match.paths[1]: expected a path pattern without empty segments ('//'), got "/a//b"`,
      ],
    ],
    [
      'relative path',
      [{ ...base, match: { paths: 'api' } }],
      [`rules[0].match.paths: expected a path pattern starting with '/', got "api"`],
    ],
    [
      'partial wildcard',
      [{ ...base, match: '/files/*.png' }],
      [
        `rules[0].match: expected a path pattern whose wildcards are whole segments ('*' or '**'), got "/files/*.png"`,
      ],
    ],
    [
      'regex-like param',
      [{ ...base, match: '/:a-:b' }],
      [
        `rules[0].match: expected a path pattern whose parameters are named like ':id', got "/:a-:b"`,
      ],
    ],
    [
      'query in pattern',
      [{ ...base, match: '/a?b=1' }],
      [
        'rules[0].match: expected a path pattern without a query string, fragment or spaces, got "/a?b=1"',
      ],
    ],
    [
      'bad method',
      [{ ...base, match: { methods: ['GET', 'G E'] } }],
      ['rules[0].match.methods[1]: expected an HTTP method like GET, got "G E"'],
    ],
    [
      'match string with a bad method',
      [{ ...base, match: 'GE-T /a' }],
      ['rules[0].match: expected an HTTP method like GET, got "GE-T"'],
    ],
    [
      'match string with three parts',
      [{ ...base, match: 'GET /a /b' }],
      [
        `rules[0].match: expected a string like 'POST /export' or '/api/**', an object with methods, paths, headers, hosts, or false (no HTTP request: a rule used through limiter.limit()), got "GET /a /b"`,
      ],
    ],
    [
      'bad host',
      [{ ...base, match: { hosts: ['ok.com', 'a..b'] } }],
      [
        `rules[0].match.hosts[1]: expected a host name like 'api.example.com' or '*.example.com', got "a..b"`,
      ],
    ],
    [
      'bad header value',
      [{ ...base, match: { headers: { 'x-a': false } } }],
      [
        'rules[0].match.headers["x-a"]: expected a string to compare with, or true for presence, got false',
      ],
    ],
    [
      'bad header name',
      [{ ...base, match: { headers: { 'x a': 'v' } } }],
      [
        `rules[0].match.headers["x a"]: expected a header name (letters, digits and !#$%&'*+.^_\`|~-), got "x a"`,
      ],
    ],
    [
      'unknown match field',
      [{ ...base, match: { path: '/a' } }],
      ['rules[0].match.path: expected a known field (did you mean "paths"?), got "/a"'],
    ],
    [
      'duplicate ids',
      [
        { ...base, id: 'x' },
        { ...base, id: 'y' },
        { ...base, id: 'z' },
        { ...base, id: 'x' },
      ],
      ['rules[3].id: duplicate id "x" (also rules[0])'],
    ],
  ])('%s', (_name, input, expected) => {
    expect(issuesOf(input)).toEqual(expected)
  })

  it('collects every issue of every rule into one error', () => {
    const err = (() => {
      try {
        parseRules([
          { ...base, limit: -1, cost: 0 },
          { id: 'r', rate: 'x' },
          { ...base, id: 'r' },
        ])
      } catch (e) {
        return e as RulesValidationError
      }
    })()!
    expect(err.code).toBe('FG_ERR_RULES_INVALID')
    expect(err.issues).toEqual([
      'rules[0].limit: expected a positive integer, got -1',
      'rules[0].cost: expected a positive number, got 0',
      `rules[1].rate: expected a rate like '10/s' or '100/1m', got "x"`,
      'rules[1].id: duplicate id "r" (also rules[0])',
      'rules[2].id: duplicate id "r" (also rules[0])',
    ])
    expect(err.message).toMatch(
      /^rules\[0\]\.limit: expected a positive integer, got -1; rules\[0\]\.cost/,
    )
  })

  it('caps the list of issues', () => {
    const issues = issuesOf(
      Array.from({ length: 80 }, (_, i) => ({ id: `r${i}`, limit: 0, window: '1s' })),
    )
    expect(issues).toHaveLength(51)
    expect(issues[50]).toBe('… and 30 more')
  })

  it('cuts long values', () => {
    const [issue] = issuesOf([{ ...base, description: 5, id: 'x'.repeat(200) }])
    expect(issue!.length).toBeLessThan(200)
  })

  it('is safe against __proto__ keys', () => {
    const input = JSON.parse(
      '[{"id":"p","limit":1,"window":"1s","__proto__":{"polluted":true}}]',
    ) as unknown
    expect(issuesOf(input)).toEqual([
      'rules[0].__proto__: expected a known field (one of id, description, deny, allow, match, key, fallbackKey, limit, window, rate, algorithm, burst, cost, onLimit, shadow, ban, count, tiers, adaptive), got {"polluted":true}',
    ])
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })
})

describe('parseRule and parseRulesDocument', () => {
  it('parseRule names its own path', () => {
    expect(() => parseRule({ id: 'a', limit: 0, window: '1s' })).toThrow(
      /^rule\.limit: expected a positive integer, got 0 \(FG_ERR_RULES_INVALID/,
    )
    expect(parseRule({ id: 'a', rate: '1/s' }).limit).toBe(1)
  })

  it('accepts a bare list or a document with a revision', () => {
    expect(parseRulesDocument([base]).rules).toHaveLength(1)
    const doc = parseRulesDocument({ service: 'api', revision: 7, rules: [base] })
    expect(doc).toMatchObject({ service: 'api', revision: '7' })
    expect(doc.rules[0]!.id).toBe('r')
  })

  it('refuses a document without a rules list', () => {
    expect(() => parseRulesDocument({ revision: '1' })).toThrow(
      /^ruleset\.rules: expected a list of rules, got nothing/,
    )
    expect(() => parseRulesDocument('nope')).toThrow(
      /^ruleset: expected a list of rules, or an object with a 'rules' list, got "nope"/,
    )
  })
})

describe('every problem at once', () => {
  it('checks the rules between fields whose fields passed, whatever the others hold', () => {
    expect(issuesOf([{}])).toEqual([
      "rules[0].id: expected an id of 1-64 letters, digits, '.', '_' or '-', other than '.' and '..', got nothing",
      'rules[0].limit: expected a positive integer, got nothing',
      "rules[0].window: expected a duration like '500ms', '10s', '1m', '1h', '1d' or a positive whole number of milliseconds, got nothing",
    ])
    expect(
      issuesOf([
        { ...base, algorithm: 'fixed-window', burst: 3, onLimit: { action: 'drop', x: 1 } },
      ]),
    ).toEqual([
      'rules[0].onLimit.x: expected a known field (one of action), got 1',
      "rules[0].burst: expected no burst for algorithm 'fixed-window' (only token-bucket, gcra and leaky-bucket have one), got 3",
    ])
  })

  it('normalises each match field whose type is right, beside an unknown one', () => {
    expect(issuesOf([{ ...base, match: { paths: 'api', hostz: 'a.com' } }])).toEqual([
      'rules[0].match.hostz: expected a known field (did you mean "hosts"?), got "a.com"',
      'rules[0].match.paths: expected a path pattern starting with \'/\', got "api"',
    ])
  })

  it('says nothing that follows from a refused field', () => {
    // The algorithm is unknown, so whether it needs a window or allows a burst is not known;
    // the limit is refused, so the capacity a cost must fit is not known either.
    expect(issuesOf([{ id: 'r', algorithm: 'magic', burst: 2, limit: 0, cost: 5 }])).toEqual([
      'rules[0].limit: expected a positive integer, got 0',
      "rules[0].algorithm: expected one of 'token-bucket', 'gcra', 'fixed-window', 'sliding-window-log', 'sliding-window-counter', 'leaky-bucket', 'concurrency', 'adaptive', got \"magic\"",
    ])
  })

  it('reads only own fields, never inherited ones', () => {
    const inherited = Object.create({ limit: 5, window: '1s' }) as object
    expect(issuesOf([Object.assign(inherited, { id: 'r' })])).toEqual([
      'rules[0].limit: expected a positive integer, got nothing',
      "rules[0].window: expected a duration like '500ms', '10s', '1m', '1h', '1d' or a positive whole number of milliseconds, got nothing",
    ])
  })
})

describe('match: false (a rule used through limiter.limit() only)', () => {
  it('is kept as false, also on an adaptive rule', () => {
    const [rule, adaptive] = parseRules([
      { ...base, match: false },
      { id: 'a', match: false, algorithm: 'adaptive', adaptive: { maxLimit: 10 } },
    ])
    expect(rule!.match).toBe(false)
    expect(adaptive!.match).toBe(false)
    expect(ruleSchema.parse({ ...base, match: false }).match).toBe(false)
  })

  it('true, an empty path list and an empty string stay refused', () => {
    const expected =
      "expected a string like 'POST /export' or '/api/**', an object with methods, paths, headers, hosts, or false (no HTTP request: a rule used through limiter.limit())"
    expect(issuesOf([{ ...base, match: true }])).toEqual([`rules[0].match: ${expected}, got true`])
    expect(issuesOf([{ ...base, match: null }])).toEqual([`rules[0].match: ${expected}, got null`])
    expect(issuesOf([{ ...base, match: { paths: [] } }])).toHaveLength(1)
    expect(issuesOf([{ ...base, match: { paths: [] } }])[0]).toMatch(/^rules\[0\]\.match\.paths/)
    expect(issuesOf([{ ...base, match: '' }])).toHaveLength(1)
  })

  it('refuses deny and allow lists on it: they act on matched requests only', () => {
    expect(
      issuesOf([
        { ...base, match: false, deny: { ips: ['10.0.0.1'] }, allow: { ips: ['10.0.0.2'] } },
        { id: 'a', match: false, algorithm: 'adaptive', adaptive: { maxLimit: 9 }, allow: {} },
      ]),
    ).toEqual([
      `rules[0].deny: expected no deny list on a rule with match: false (a rule's lists apply to the HTTP requests it matches, and it matches none), got {"ips":["10.0.0.1"]}`,
      `rules[0].allow: expected no allow list on a rule with match: false (a rule's lists apply to the HTTP requests it matches, and it matches none), got {"ips":["10.0.0.2"]}`,
      expect.stringMatching(/^rules\[1\]\.allow: /),
      expect.stringMatching(
        /^rules\[1\]\.allow: expected no allow list on a rule with match: false/,
      ),
    ])
  })

  it('is in the published JSON Schema, which still refuses true', () => {
    const schema = ruleSchema.toJSONSchema() as {
      properties: { match: { description: string; anyOf: unknown[] } }
    }
    expect(schema.properties.match.anyOf).toContainEqual(expect.objectContaining({ const: false }))
    expect(schema.properties.match.anyOf).not.toContainEqual(
      expect.objectContaining({ const: true }),
    )
    expect(schema.properties.match.description).toMatch(/or false \(no HTTP request/)
  })
})

describe('ruleSchema and rulesSchema', () => {
  it('parse, or return the error from safeParse', () => {
    expect(ruleSchema.parse(base).limit).toBe(10)
    expect(rulesSchema.safeParse([base])).toMatchObject({ success: true, data: [{ id: 'r' }] })
    const failed = ruleSchema.safeParse({ ...base, limit: 0 })
    expect(failed.success).toBe(false)
    if (!failed.success) {
      expect(failed.error).toBeInstanceOf(RulesValidationError)
      expect(failed.error.issues).toEqual(['rule.limit: expected a positive integer, got 0'])
    }
    expect(() => rulesSchema.parse({})).toThrow(/^rules: expected a list of rules, got \{\}/)
  })

  it('describe the same fields as the checks, as JSON Schema', () => {
    const schema = ruleSchema.toJSONSchema() as {
      properties: Record<string, { description?: string }>
      required: string[]
      additionalProperties: boolean
    }
    const known = /one of (.*)\), got/.exec(issuesOf([{ ...base, colour: 1 }])[0]!)![1]!.split(', ')
    expect(Object.keys(schema.properties)).toEqual(known)
    expect(schema.required).toEqual(['id'])
    expect(schema.additionalProperties).toBe(false)
    expect(schema.properties.limit!.description).toBe('a positive integer')
    // A fresh copy each time: a caller that edits it changes nobody else's.
    ;(schema as Record<string, unknown>).$schema = 'x'
    expect(ruleSchema.toJSONSchema().$schema).toBe('https://json-schema.org/draft/2020-12/schema')
    expect(rulesSchema.toJSONSchema()).toMatchObject({ type: 'array', items: { required: ['id'] } })
  })
})
