import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

// The CommonJS build has __filename; the ES module build has import.meta.url.
const here = typeof __filename === 'string' ? __filename : fileURLToPath(import.meta.url)

/**
 * Whether an optional peer dependency is installed where this package can load it. Resolved
 * as `require` would (the peers checked publish a `require` condition), without loading it.
 */
export function isInstalled(name: string): boolean {
  try {
    createRequire(here).resolve(name)
    return true
  } catch {
    return false
  }
}
