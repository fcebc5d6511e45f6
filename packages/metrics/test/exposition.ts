// A small strict parser of the Prometheus text exposition format (version 0.0.4): every line
// is a HELP, a TYPE or a sample of a declared family, label values are properly quoted, and
// values are numbers. Anything else throws, so a malformed scrape fails the test that reads it.

export interface Family {
  readonly type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped'
  help: string
  readonly samples: Sample[]
}

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*'
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*'
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: (-?\\d+))?$`, 's')
const LABEL_PAIR = new RegExp(`^(${LABEL})="((?:[^"\\\\\\n]|\\\\[\\\\"n])*)"(,|$)`)
const SUFFIXES: Readonly<Record<string, readonly string[]>> = {
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count'],
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {}
  let rest = text
  while (rest.length > 0) {
    const m = LABEL_PAIR.exec(rest)
    if (!m) throw new Error(`bad labels in: ${line}`)
    const [all, name, raw] = m as unknown as [string, string, string]
    if (name in labels) throw new Error(`label ${name} twice in: ${line}`)
    labels[name] = raw.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c))
    rest = rest.slice(all.length)
  }
  return labels
}

function parseValue(v: string, line: string): number {
  if (v === '+Inf') return Infinity
  if (v === '-Inf') return -Infinity
  if (v === 'NaN') return NaN
  const n = Number(v)
  if (v === '' || Number.isNaN(n)) throw new Error(`bad value in: ${line}`)
  return n
}

/** The families of a scrape by name; throws on the first line that does not follow the format. */
export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>()
  const familyOf = (sample: string): Family | undefined => {
    const exact = families.get(sample)
    if (exact && (SUFFIXES[exact.type] ?? ['']).includes('')) return exact
    for (const [name, f] of families) {
      for (const s of SUFFIXES[f.type] ?? ['']) if (s !== '' && sample === name + s) return f
    }
    return undefined
  }
  if (text.length > 0 && !text.endsWith('\n'))
    throw new Error('the scrape does not end with a newline')
  for (const line of text.split('\n')) {
    if (line === '') continue
    if (line.startsWith('# HELP ')) {
      const m = new RegExp(`^# HELP (${NAME}) (.*)$`).exec(line)
      if (!m) throw new Error(`bad HELP: ${line}`)
      const f = families.get(m[1]!)
      if (f) f.help = m[2]!
      else families.set(m[1]!, { type: 'untyped', help: m[2]!, samples: [] })
      continue
    }
    if (line.startsWith('# TYPE ')) {
      const m = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`).exec(
        line,
      )
      if (!m) throw new Error(`bad TYPE: ${line}`)
      const prev = families.get(m[1]!)
      if (prev && prev.samples.length > 0) throw new Error(`TYPE after samples: ${line}`)
      families.set(m[1]!, {
        type: m[2] as Family['type'],
        help: prev?.help ?? '',
        samples: [],
      })
      continue
    }
    if (line.startsWith('#')) continue
    const m = SAMPLE.exec(line)
    if (!m) throw new Error(`bad sample: ${line}`)
    const family = familyOf(m[1]!)
    if (!family) throw new Error(`sample of an undeclared family: ${line}`)
    family.samples.push({
      name: m[1]!,
      labels: m[2] === undefined ? {} : parseLabels(m[2], line),
      value: parseValue(m[3]!, line),
    })
  }
  return families
}

/** The value of the one sample named `name` whose labels include `labels`, or undefined. */
export function valueOf(
  families: Map<string, Family>,
  name: string,
  labels: Readonly<Record<string, string>> = {},
): number | undefined {
  const hits = [...families.values()]
    .flatMap((f) => f.samples)
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  if (hits.length > 1)
    throw new Error(`${hits.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return hits[0]?.value
}
