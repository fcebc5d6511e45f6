import { existsSync } from 'node:fs'
import fc from 'fast-check'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startRulesService, type RunningRulesService } from '@floodgate/rules-service'
import { IS_CI, TOKENS } from './helpers.js'

// Hostile text on the admin page, in a real browser: rule descriptions, rule ids and client
// keys that hosts report, written as HTML, attributes, scripts, bidi controls. Every one must
// be shown as the text it is, run nothing, and leave the text around it as it was.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const hasChromium = existsSync(CHROMIUM)
if (!hasChromium && IS_CI) {
  throw new Error(`the hostile-text page test needs chromium at ${CHROMIUM} under CI=true`)
}
const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 15_000, interval: 50 })

// Each one would run a script, add an element or break out of an attribute if inserted as
// HTML; the bidi controls (RIGHT-TO-LEFT OVERRIDE, RIGHT-TO-LEFT MARK, an isolate left open)
// would reorder what is displayed after them if they leaked out of their element.
const HOSTILE = [
  '<script>window.__pwned = "script"</script>',
  '<img src=x onerror="window.__pwned = \'img\'">',
  '"><svg onload="window.__pwned = \'svg\'">',
  "'; window.__pwned = 'quote'; '",
  '</td></tr><tr><td>forged row',
  '&lt;b&gt;entity&amp;&#x3c;',
  '\u202eevil.com/gpj.exe',
  'rtl mark \u200f then \u2067open isolate',
  'zero\u200bwidth \u{1f600} emoji ✓ ümlaut 名前',
  'x'.repeat(200),
] as const

/**
 * How the page shows a rule id or client key a host reported: every character that shows
 * nothing or moves the text around it (controls, format characters such as bidi overrides and
 * zero-width joiners, line and paragraph separators) as its code point, `U+202E`, so that two
 * different keys never look the same.
 */
const shown = (text: string): string =>
  text.replace(
    /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu,
    (c) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`,
  )

const auth = { authorization: `Bearer ${TOKENS.admin}`, 'content-type': 'application/json' }

describe.skipIf(!hasChromium)('admin page with hostile text, in chromium', () => {
  let service: RunningRulesService
  let browser: Browser
  let page: Page
  const pageErrors: string[] = []

  beforeAll(async () => {
    service = await startRulesService({
      port: 0,
      services: ['shop', 'empty'],
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
    })
    const rules = HOSTILE.map((description, i) => ({
      id: `r${i}`,
      limit: 10,
      window: '1m',
      description,
    }))
    const put = await fetch(`${service.url}/v1/services/shop/rules`, {
      method: 'PUT',
      headers: auth,
      body: JSON.stringify({ rules }),
    })
    expect(put.status).toBe(200)
    // A host reports rules the rule set does not have, under hostile ids, each refusing
    // clients whose keys (shown in clear) are hostile too.
    const report = await fetch(`${service.url}/v1/services/shop/report`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        host: 'web-1',
        intervalMs: 10_000,
        rules: HOSTILE.map((id, i) => ({
          id,
          counts: { allowed: 1, rejected: i + 1 },
          top: [{ client: HOSTILE[(i + 1) % HOSTILE.length], count: i + 1 }],
        })),
      }),
    })
    expect(report.status).toBeLessThan(300)

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-sync'],
    })
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
    page.setDefaultTimeout(15_000)
    page.on('pageerror', (err) => pageErrors.push(err.message))
    page.on('console', (msg) => {
      if (msg.type() === 'error') pageErrors.push(msg.text())
    })
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await service?.stop()
  })

  it('shows every hostile string as its text, runs nothing and adds no element', async () => {
    await page.goto(`${service.url}/admin/#service=shop`)
    await poll(() => page.locator('#rules tbody tr').count()).toBe(HOSTILE.length)
    await poll(() => page.locator('.fleet-rule').count()).toBe(HOSTILE.length)

    const descriptions = await page.locator('#rules .description').allTextContents()
    expect(descriptions).toEqual([...HOSTILE])
    const ids = await page.locator('.fleet-rule h3 .mono').allTextContents()
    expect(new Set(ids)).toEqual(new Set(HOSTILE.map(shown)))
    const clients = await page.locator('.fleet-top td.mono').allTextContents()
    expect(new Set(clients)).toEqual(new Set(HOSTILE.map(shown)))

    // Nothing ran and nothing was parsed as markup: no global set, only the page's own
    // scripts, no image or svg, one row per rule, and no error (a blocked inline script or
    // handler would log a CSP violation).
    expect(await page.evaluate(() => (window as { __pwned?: unknown }).__pwned)).toBeUndefined()
    const scripts = await page.evaluate(() =>
      Array.from(document.scripts).map((s) => new URL(s.src || 'inline:', location.href).pathname),
    )
    expect(scripts.every((p) => p.startsWith('/admin/'))).toBe(true)
    expect(await page.locator('img, svg, iframe, object, embed').count()).toBe(0)
    expect(await page.locator('#rules tbody td:text-is("forged row")').count()).toBe(0)
    expect(pageErrors).toEqual([])
  })

  it('keeps a bidi control inside its own element: the text after it reads in order', async () => {
    await page.goto(`${service.url}/admin/#service=shop`)
    await poll(() => page.locator('.fleet-rule').count()).toBe(HOSTILE.length)
    // Visual order of the first and last letter of a text beside the hostile one: in reading
    // order, the first is left of the last. A right-to-left override that leaked would put it
    // right of the last.
    const inOrder = (selector: string) =>
      page.evaluate((sel) => {
        return Array.from(document.querySelectorAll(sel)).map((el) => {
          const text = el.firstChild
          if (text === null || text.nodeType !== Node.TEXT_NODE) return 'no text'
          const length = (text.textContent ?? '').length
          const x = (offset: number) => {
            const range = document.createRange()
            range.setStart(text, offset)
            range.setEnd(text, offset + 1)
            return range.getBoundingClientRect().left
          }
          return x(0) < x(length - 1) ? 'in order' : `reversed: ${el.textContent}`
        })
      }, selector)
    // The badge after a reported id that is not in the rules; the counts under it; the
    // refused count beside each client.
    for (const selector of [
      '.fleet-rule h3 .badge',
      '.fleet-totals',
      '#rules td[data-label="Match"]',
    ]) {
      const order = await inOrder(selector)
      expect(order.length).toBeGreaterThan(0)
      expect(order.filter((o) => o !== 'in order')).toEqual([])
    }
  })

  it('never shows a reported client key that looks like another one', async () => {
    // Failed before: '\u202e' + 'ecila' was shown as its characters, which the browser draws
    // as 'alice', beside the real alice.
    const spoof = '\u202eecila'
    const res = await fetch(`${service.url}/v1/services/shop/report`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        host: 'web-2',
        intervalMs: 10_000,
        rules: [
          {
            id: 'r0',
            counts: { rejected: 2 },
            top: [
              { client: 'alice', count: 1 },
              { client: spoof, count: 1 },
            ],
          },
        ],
      }),
    })
    expect(res.status).toBeLessThan(300)
    // A new document (not a hash change on the same one), so the view is loaded afresh.
    await page.goto('about:blank')
    await page.goto(`${service.url}/admin/#service=shop`)
    const cells = page.locator('.fleet-rule[data-rule="r0"] .fleet-top td.mono')
    await poll(() => cells.count()).toBe(2)
    const drawn = await cells.evaluateAll((tds) => tds.map((td) => (td as HTMLElement).innerText))
    expect(new Set(drawn)).toEqual(new Set(['alice', 'U+202Eecila']))
    expect(await cells.locator('.hidden-char').count()).toBe(1)
  })

  it('shows any reported text as the model says: hidden characters as code points (property)', async () => {
    await page.goto(`${service.url}/admin/#service=shop`)
    // Any code point but lone surrogates (a report refuses them), hidden ones drawn often.
    const text = fc
      .string({
        unit: fc.oneof(
          fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
          fc.constantFrom('\u202e', '\u2066', '\u200d', '\u0085', '\u2028', '\ufeff', '\u061c'),
        ),
        maxLength: 40,
      })
      .filter((t) => !/\p{Cs}/u.test(t))
    const samples = fc.sample(text, { numRuns: 2000, seed: 7 })
    // The page's own function, run in the page on each sample (passed as text: vitest would
    // rewrite an import() written in a function).
    const drawn = await page.evaluate<(string | null)[]>(`(async (texts) => {
      const { identifier } = await import('/admin/fleet.js')
      return texts.map((t) => identifier('td', t, 'mono').textContent)
    })(${JSON.stringify(samples)})`)
    expect(drawn).toEqual(samples.map(shown))
  })

  it('shows a report at every bound (256 rules, 20 clients each, longest ids) in full, within the page width', async () => {
    // One host's report at the bounds the service accepts, on a service whose body limit
    // lets it in (hosts trim theirs to 60 000 bytes by default; several hosts add up).
    const big = await startRulesService({
      port: 0,
      bodyLimit: 4_000_000,
      services: ['shop'],
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
    })
    try {
      const res = await fetch(`${big.url}/v1/services/shop/report`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({
          host: 'web-1',
          intervalMs: 10_000,
          rules: Array.from({ length: 256 }, (_, i) => ({
            id: `${i}-${'r'.repeat(196)}`.slice(0, 200),
            counts: { allowed: 5, rejected: 20 },
            top: Array.from({ length: 20 }, (_, j) => ({
              client: `${i}-${j}-${'k'.repeat(256)}`.slice(0, 256),
              count: 20 - j,
            })),
          })),
        }),
      })
      expect(res.status).toBe(200)
      await page.goto(`${big.url}/admin/#service=shop`)
      await poll(() => page.locator('.fleet-rule').count()).toBe(256)
      await poll(() => page.locator('.fleet-rule canvas').count()).toBeGreaterThanOrEqual(256)
      expect(await page.locator('.fleet-top tbody tr').count()).toBe(256 * 20)
      // Long ids and keys wrap: nothing widens the page past its viewport.
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(
        1200,
      )
      expect(pageErrors).toEqual([])
    } finally {
      // Leave the page first: its next poll of a stopped service would log an error.
      await page.goto('about:blank')
      await big.stop()
    }
  })

  it('shows the empty states of a service with no rules and no reports', async () => {
    await page.goto(`${service.url}/admin/#service=empty`)
    await poll(() => page.isVisible('#rules-empty')).toBe(true)
    expect(await page.textContent('#rules-empty')).toBe('No rules yet.')
    await poll(() => page.isVisible('#fleet-empty')).toBe(true)
    expect(await page.locator('.fleet-rule').count()).toBe(0)
    expect(pageErrors).toEqual([])
  })
})
