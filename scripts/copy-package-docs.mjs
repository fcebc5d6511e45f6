// Run by a package's `prepack`: copies the named pages of the repository's docs/ into the
// package's own docs/ folder, so the tarball ships them (error messages and the package README
// link to them) while docs/ stays the one copy that is edited. A link to a page the package
// does not ship would not resolve for someone who installed it, so it becomes plain text.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const repoDocs = fileURLToPath(new URL('../docs/', import.meta.url))
const pages = process.argv.slice(2)
if (pages.length === 0) throw new Error('copy-package-docs: name the docs pages to copy')

/** `[label](./page.md#part)` to a page not in `pages`: `label (docs/page.md in the repository)`. */
export function unlinkUnshipped(markdown, shipped) {
  return markdown.replace(
    /\[([^\]]+)\]\((?:\.\/)?([\w-]+\.md)(#[\w-]*)?\)/g,
    (link, label, page) =>
      shipped.includes(page) ? link : `${label} (docs/${page} in the Floodgate repository)`,
  )
}

mkdirSync('docs', { recursive: true })
for (const page of pages) {
  const text = readFileSync(join(repoDocs, page), 'utf8')
  writeFileSync(join('docs', page), unlinkUnshipped(text, pages))
}
