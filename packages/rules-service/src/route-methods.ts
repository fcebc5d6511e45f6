// The methods each route answers, so a known path asked with another method gets 405 and the
// methods it takes (RFC 9110 §15.5.6), not a 404 saying the path does not exist.

interface RoutePattern {
  readonly segments: readonly string[]
  readonly methods: Set<string>
}

/** Route patterns and their methods, collected as routes are registered. */
export class RouteMethods {
  readonly #routes: RoutePattern[] = []

  /**
   * @param url - a route pattern as registered (`/v1/services/:service`)
   * @param methods - its method or methods
   */
  add(url: string, methods: string | readonly string[]): void {
    const list = typeof methods === 'string' ? [methods] : methods
    const segments = url.split('/')
    let route = this.#routes.find((r) => r.segments.join('/') === segments.join('/'))
    if (route === undefined) this.#routes.push((route = { segments, methods: new Set() }))
    for (const method of list) route.methods.add(method.toUpperCase())
    if (route.methods.has('GET')) route.methods.add('HEAD')
  }

  /**
   * @param url - the request's URL, query string included
   * @returns the methods some route answers at this path, sorted; none for an unknown path
   */
  allowed(url: string): string[] {
    const segments = (url.split('?')[0] ?? '').split('/').map(decodeSegment)
    const methods = new Set<string>()
    for (const route of this.#routes) {
      if (matches(route.segments, segments)) for (const m of route.methods) methods.add(m)
    }
    return [...methods].sort()
  }
}

function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment)
  } catch {
    return undefined
  }
}

function matches(pattern: readonly string[], path: readonly (string | undefined)[]): boolean {
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!
    if (p === '*') return true
    const s = path[i]
    if (s === undefined) return false
    if (p.startsWith(':') ? s === '' : s !== p) return false
  }
  return pattern.length === path.length
}
