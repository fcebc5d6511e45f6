import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const src = fileURLToPath(new URL('../src/', import.meta.url))

/** The packages a source module loads at run time, following its relative imports. */
function runtimePackages(entry: string): Set<string> {
  const packages = new Set<string>()
  const seen = new Set<string>()
  const visit = (file: string): void => {
    if (seen.has(file)) return
    seen.add(file)
    const text = readFileSync(file, 'utf8')
    // Type-only imports and re-exports vanish from the JavaScript: they load nothing.
    for (const m of text.matchAll(/^(?:import|export)(?!\s+type\b)[^'"]*?from\s+'([^']+)'/gm)) {
      const spec = m[1]!
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec.replace(/\.js$/, '.ts')))
      else packages.add(spec)
    }
  }
  visit(join(src, entry))
  return packages
}

describe('entry points', () => {
  it('/prometheus loads prom-client and never OpenTelemetry', () => {
    expect([...runtimePackages('prometheus.ts')].sort()).toEqual([
      '@floodgate/core/options',
      'prom-client',
    ])
  })

  it('/opentelemetry loads @opentelemetry/api and never prom-client', () => {
    expect([...runtimePackages('opentelemetry.ts')].sort()).toEqual([
      '@floodgate/core/options',
      '@opentelemetry/api',
    ])
  })

  it('the root loads neither', () => {
    expect([...runtimePackages('index.ts')].sort()).toEqual(['@floodgate/core/options'])
  })
})
