import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { duplicateJsonKey } from './json-duplicate-keys.js'

// JSON texts whose objects may repeat keys, written with any spacing and with keys escaped or
// not, against a model that walks the same tree in document order.

type Node =
  | { kind: 'leaf'; value: null | boolean | number | string }
  | { kind: 'array'; items: Node[] }
  | { kind: 'object'; entries: { key: string; escaped: boolean; value: Node }[] }

const keyName = fc.constantFrom('a', 'b', 'rate', 'a b', '"', '\\', 'é', '\u2028', '')

const { node } = fc.letrec<{ node: Node }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({
      kind: fc.constant('leaf' as const),
      value: fc.oneof(
        fc.constant(null),
        fc.boolean(),
        fc.integer(),
        fc.string({ unit: 'binary' }),
        fc.constantFrom('{', '}', '[', ',', '"', '\\"', ':'),
      ),
    }),
    fc.record({
      kind: fc.constant('array' as const),
      items: fc.array(tie('node'), { maxLength: 4 }),
    }),
    fc.record({
      kind: fc.constant('object' as const),
      entries: fc.array(fc.record({ key: keyName, escaped: fc.boolean(), value: tie('node') }), {
        maxLength: 4,
      }),
    }),
  ),
}))

/** Every character as \uXXXX: the same key, spelled otherwise. */
const escape = (key: string): string =>
  `"${[...key].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`

function write(n: Node, space: string): string {
  switch (n.kind) {
    case 'leaf':
      return JSON.stringify(n.value)
    case 'array':
      return `[${space}${n.items.map((i) => write(i, space)).join(`${space},${space}`)}${space}]`
    case 'object':
      return `{${space}${n.entries
        .map(
          (e) =>
            `${e.escaped ? escape(e.key) : JSON.stringify(e.key)}${space}:${space}${write(e.value, space)}`,
        )
        .join(`${space},${space}`)}${space}}`
  }
}

/** The model: the first repeated key in document order, as a path of keys and indices. */
function firstDuplicate(n: Node, path: (string | number)[] = []): (string | number)[] | undefined {
  if (n.kind === 'array') {
    for (const [i, item] of n.items.entries()) {
      const found = firstDuplicate(item, [...path, i])
      if (found) return found
    }
  }
  if (n.kind === 'object') {
    const seen = new Set<string>()
    for (const e of n.entries) {
      if (seen.has(e.key)) return [...path, e.key]
      seen.add(e.key)
      const found = firstDuplicate(e.value, [...path, e.key])
      if (found) return found
    }
  }
  return undefined
}

const format = (path: (string | number)[]): string =>
  path
    .map((p) =>
      typeof p === 'number'
        ? `[${p}]`
        : /^[A-Za-z_$][\w$]*$/.test(p)
          ? `.${p}`
          : `[${JSON.stringify(p)}]`,
    )
    .join('')

describe('duplicateJsonKey', () => {
  it('property: finds the first key given twice in one object, by its path, and nothing else', () => {
    fc.assert(
      fc.property(node, fc.constantFrom('', ' ', '\n\t', ' \r\n '), (tree, space) => {
        const text = write(tree, space)
        JSON.parse(text) // the texts are JSON
        const expected = firstDuplicate(tree)
        expect(duplicateJsonKey(text, 'body')).toBe(
          expected === undefined ? undefined : `body${format(expected)}`,
        )
      }),
      { numRuns: 2000 },
    )
  })

  it('names a key at the top without a prefix, and keys spelled with escapes as the same', () => {
    expect(duplicateJsonKey('{"rules":[],"rules":[]}')).toBe('rules')
    expect(duplicateJsonKey('{"rules":[{"rate":"1/s","r\\u0061te":"9/s"}]}', 'body')).toBe(
      'body.rules[0].rate',
    )
    expect(duplicateJsonKey('{"a":{"b":1},"c":{"b":2}}')).toBeUndefined()
    expect(duplicateJsonKey('[{"a":1},{"a":2}]')).toBeUndefined()
  })
})
