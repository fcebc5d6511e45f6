import { createRequire } from 'node:module'

/**
 * Whether an optional peer dependency is installed where this package can load it. Resolved
 * as `require` would (the peers checked publish a `require` condition), without loading it.
 */
export function isInstalled(name: string): boolean {
  try {
    createRequire(import.meta.url).resolve(name)
    return true
  } catch {
    return false
  }
}
