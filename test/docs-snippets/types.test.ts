import { expect, inject, it } from 'vitest'
import { recordedSnippets, snippetTypeErrors } from './index.ts'

// Each package's docs tests run their snippets; the snippets of all of them are type-checked
// here, in one program, rather than in one program per docs test.
it('every docs snippet this run ran type-checks, in one program', () => {
  const folder = inject('floodgateDocsSnippets')
  if (folder === undefined)
    throw new Error('run from the repository root: its vitest config collects the snippets')
  const files = recordedSnippets(folder)
  expect(
    files.length,
    'no docs test ran a snippet in this run: run the docs tests with this project',
  ).toBeGreaterThan(0)
  expect(snippetTypeErrors(files)).toEqual([])
})
