import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestProject } from 'vitest/node'

/**
 * A vitest run from the repository root: one folder for the snippets every docs test runs, so
 * `types.test.ts` type-checks them all in one program after the tests; removed when the run ends.
 */
export default function setup(project: TestProject): () => void {
  const folder = mkdtempSync(join(tmpdir(), 'floodgate-docs-run-'))
  project.provide('floodgateDocsSnippets', folder)
  return () => rmSync(folder, { recursive: true, force: true })
}
