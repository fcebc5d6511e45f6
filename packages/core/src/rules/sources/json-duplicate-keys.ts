import { formatPath } from '../schema-issues.js'

// JSON.parse keeps the last of a key given twice in one object (`{"rate":"1/s","rate":"9/s"}`),
// so which value counts depends on the parser, and the writer's first value is dropped without
// a word. A rules body or file with one is refused instead, naming the key.

interface ObjectFrame {
  readonly keys: Set<string>
  /** The key whose value is being read. */
  key: string
  /** True between `{` or `,` and the next key. */
  expectKey: boolean
}
interface ArrayFrame {
  index: number
}

/**
 * The first key given twice in one object of a JSON text, in document order.
 *
 * @param text - a text `JSON.parse` accepted (anything else gives no answer to rely on)
 * @param prefix - the name the path starts with (`body`, or '' for none)
 * @returns the path of the repeated key's second occurrence (`rules[0].rate`), or undefined
 * when every object's keys are distinct. Keys are compared as parsed: `"a"` and `"\u0061"` are
 * the same key.
 */
export function duplicateJsonKey(text: string, prefix = ''): string | undefined {
  const stack: (ObjectFrame | ArrayFrame)[] = []
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]
    if (ch === '"') {
      let end = i + 1
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1
      const top = stack.at(-1)
      if (top !== undefined && 'keys' in top && top.expectKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string
        if (top.keys.has(key)) return formatPath(prefix, [...pathOf(stack), key])
        top.keys.add(key)
        top.key = key
        top.expectKey = false
      }
      i = end
    } else if (ch === '{') stack.push({ keys: new Set(), key: '', expectKey: true })
    else if (ch === '[') stack.push({ index: 0 })
    else if (ch === '}' || ch === ']') stack.pop()
    else if (ch === ',') {
      const top = stack.at(-1)
      if (top === undefined) continue
      if ('keys' in top) top.expectKey = true
      else top.index++
    }
  }
  return undefined
}

/** The path to the innermost open object: each enclosing object's key, each array's index. */
function pathOf(stack: readonly (ObjectFrame | ArrayFrame)[]): (string | number)[] {
  return stack.slice(0, -1).map((f) => ('keys' in f ? f.key : f.index))
}

/**
 * @param text - a text `JSON.parse` accepted
 * @returns what is wrong when an object in it gives a key twice (to follow "body" or "it"),
 * or undefined
 */
export function duplicateKeyIssue(text: string): string | undefined {
  const path = duplicateJsonKey(text)
  return path === undefined
    ? undefined
    : `gives a key twice in one object, at ${path} (which value counts would depend on the parser); give each key once`
}
