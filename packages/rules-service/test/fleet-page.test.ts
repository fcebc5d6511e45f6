import { existsSync, mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createLimiter,
  httpRules,
  type HttpRulesOptions,
  type Limiter,
  type RuleInput,
} from '@floodgate/core'
import { startRulesService, type RunningRulesService } from '@floodgate/rules-service'
import { IS_CI, TOKENS } from './helpers.js'

// The fleet view of the admin page in a real browser, fed by real hosts: limiters built with
// createLimiter and httpRules(…, { report }) deciding real requests and reporting with their
// polls to a running rules service.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const hasChromium = existsSync(CHROMIUM)
if (!hasChromium && IS_CI) {
  throw new Error(`the fleet page test needs chromium at ${CHROMIUM} under CI=true`)
}
const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 15_000, interval: 50 })
const ARTIFACTS = fileURLToPath(new URL('../test-artifacts/', import.meta.url))

const RULES: RuleInput[] = [
  { id: 'api', key: 'header:x-api-key', limit: 3, window: '1m', description: 'per API key' },
  {
    id: 'export',
    key: 'header:x-api-key',
    limit: 1,
    window: '1m',
    shadow: true,
    description: 'a tighter limit, tried in shadow first',
  },
]
const CLIENTS = ['alice', 'bob', 'carol'] as const
// Requests per client per round: alice is the noisy one.
const LOAD: Record<(typeof CLIENTS)[number], number> = { alice: 6, bob: 3, carol: 1 }

describe.skipIf(!hasChromium)('fleet view in chromium', () => {
  let service: RunningRulesService
  let browser: Browser
  let page: Page
  const hosts: { limiter: Limiter; poll(): Promise<void> }[] = []
  const pageErrors: string[] = []

  // The service's clock: in the middle of a bucket, three buckets back, so after the three
  // rounds it is near the real time the page reads (it shows how long ago hosts reported).
  let now = Math.floor(Date.now() / 1000) * 1000 - 2500

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true })
    service = await startRulesService({
      port: 0,
      services: ['shop'],
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
      // One-second buckets on a clock the test moves, so each round of reports lands in its
      // own bucket and the charts have several points, without waiting for real seconds.
      fleet: { bucketMs: 1000, buckets: 30, now: () => now },
    })
    const put = await fetch(`${service.url}/v1/services/shop/rules`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${TOKENS.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ rules: RULES }),
    })
    expect(put.status).toBe(200)

    for (const name of ['web-a', 'web-b']) {
      const options: HttpRulesOptions = { intervalMs: 3_600_000, report: { host: name } }
      const rules = httpRules(`${service.url}/v1/services/shop/ruleset`, options)
      const limiter = createLimiter({ rules, topClients: { clearKeys: true } })
      await limiter.ready
      hosts.push({ limiter, poll: () => rules.poll() })
    }
    // Three rounds a bucket apart: each host decides its share of requests, then polls
    // (carrying its report). The test drives the polls so the numbers are known.
    for (let round = 0; round < 3; round++) {
      for (const [i, host] of hosts.entries()) {
        for (const client of CLIENTS) {
          for (let n = 0; n < LOAD[client] + i; n++) {
            await host.limiter.check({
              method: 'GET',
              path: '/export',
              ip: '127.0.0.1',
              headers: { 'x-api-key': `${client}-${round}` },
            })
          }
        }
        await host.poll()
      }
      now += 1000
    }

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
  }, 90_000)

  afterAll(async () => {
    await browser?.close()
    for (const h of hosts) await h.limiter.close()
    await service?.stop()
  })

  /** What the hosts themselves counted, summed: what the page must show. */
  const counted = (rule: string, field: 'allowed' | 'rejected' | 'shadowRejected') =>
    hosts.reduce((n, h) => n + (h.limiter.counters().byRule.get(rule)?.[field] ?? 0), 0)

  it('draws each rule’s decisions per second with its legend, and names the refused clients', async () => {
    await page.goto(`${service.url}/admin/#service=shop`)
    await poll(() => page.locator('.fleet-rule').count()).toBe(2)
    expect(await page.textContent('#fleet-hosts')).toMatch(
      /2 hosts reporting: web-(a|b).*web-(a|b)/,
    )

    // A uPlot chart per rule, with the four series named in its legend and points drawn.
    for (const rule of ['api', 'export']) {
      const card = page.locator(`.fleet-rule[data-rule="${rule}"]`)
      await poll(() => card.locator('canvas').count()).toBeGreaterThan(0)
      const labels = await card.locator('.u-legend .u-series .u-label').allTextContents()
      expect(labels).toEqual(['time', 'allowed', 'queued', 'rejected', 'would reject (shadow)'])
      await poll(async () =>
        Number(await card.locator('.fleet-chart').getAttribute('data-points')),
      ).toBeGreaterThanOrEqual(2)
    }

    const api = page.locator('.fleet-rule[data-rule="api"]')
    const allowed = counted('api', 'allowed')
    const rejected = counted('api', 'rejected')
    expect(rejected).toBeGreaterThan(0)
    expect(await api.locator('.fleet-totals').textContent()).toContain(
      `${allowed} allowed, 0 queued, ${rejected} rejected`,
    )
    // The noisiest client of every round is alice; both hosts' refusals of her add up.
    const rows = await api.locator('.fleet-top tbody tr').allTextContents()
    expect(rows[0]).toMatch(/^alice-\d/)
    expect(rows.some((r) => r.startsWith('bob-'))).toBe(true)
    expect(rows.some((r) => r.startsWith('carol-'))).toBe(false)

    // The shadow rule: what enforcing it would have refused, and whom.
    const shadow = page.locator('.fleet-rule[data-rule="export"]')
    expect(await shadow.locator('.badge.shadow').textContent()).toBe('shadow')
    const wouldRefuse = counted('export', 'shadowRejected')
    expect(wouldRefuse).toBeGreaterThan(rejected)
    expect(await shadow.locator('[data-would-refuse]').getAttribute('data-would-refuse')).toBe(
      String(wouldRefuse),
    )
    expect(await shadow.locator('.fleet-would').textContent()).toMatch(
      new RegExp(`would have refused ${wouldRefuse} requests in the last 30 s`),
    )
    const whom = await shadow.locator('.fleet-top tbody tr').allTextContents()
    expect(whom.some((r) => r.startsWith('carol-'))).toBe(true)
    expect(whom[0]).toMatch(/^alice-/)

    await page.screenshot({ path: `${ARTIFACTS}fleet-view.png`, fullPage: true })
    expect(pageErrors).toEqual([])
  })

  it('follows the hosts as they keep reporting, redrawing the same charts', async () => {
    const api = page.locator('.fleet-rule[data-rule="api"]')
    await api.locator('.fleet-chart').evaluate((el) => el.setAttribute('data-marked', 'yes'))
    for (let n = 0; n < 5; n++) {
      await hosts[0]!.limiter.check({
        method: 'GET',
        path: '/export',
        ip: '127.0.0.1',
        headers: { 'x-api-key': 'dave' },
      })
    }
    await hosts[0]!.poll()
    const allowed = counted('api', 'allowed')
    const rejected = counted('api', 'rejected')
    await poll(() => api.locator('.fleet-totals').textContent()).toContain(
      `${allowed} allowed, 0 queued, ${rejected} rejected`,
    )
    await poll(() => api.locator('.fleet-top tbody tr').allTextContents()).toContain('dave2')
    // The chart element (and its uPlot) is the one drawn first, with new data.
    expect(await api.locator('.fleet-chart').getAttribute('data-marked')).toBe('yes')
    expect(await api.locator('canvas').count()).toBe(1)
  })

  it('fits a 390 px wide phone: the charts shrink, nothing scrolls sideways', async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    try {
      await poll(() =>
        page
          .locator('.fleet-rule[data-rule="api"] canvas')
          .first()
          .evaluate((c) => c.clientWidth),
      ).toBeLessThan(390)
      const overflow = await page
        .locator('#fleet-section')
        .evaluate((el) => el.scrollWidth - el.clientWidth)
      expect(overflow).toBeLessThanOrEqual(0)
      await page.screenshot({ path: `${ARTIFACTS}fleet-view-390.png`, fullPage: true })
    } finally {
      await page.setViewportSize({ width: 1200, height: 900 })
    }
  })

  it('enforces a shadow rule with one action, recorded in the audit trail', async () => {
    const before = (await (await fetch(`${service.url}/v1/services/shop/audit`)).json()) as {
      entries: unknown[]
    }
    // Without a token there is no button, only what enforcing would take.
    await poll(() =>
      page.locator('.fleet-rule[data-rule="export"] .fleet-enforce').textContent(),
    ).toMatch(/needs a token/)
    expect(await page.locator('[data-enforce]').count()).toBe(0)

    await page.fill('#token', TOKENS.admin)
    await page.click('#token-form button[type=submit]')
    await poll(() => page.textContent('#token-state')).toMatch(/token set/)
    await poll(() => page.locator('[data-enforce="export"]').isEnabled()).toBe(true)
    await page.locator('[data-enforce="export"]').click()
    await page.locator('[data-enforce="export"]').click()
    // The rule is no longer shadow: its card shows refused clients, no enforce button.
    await poll(() => page.locator('.fleet-rule[data-rule="export"] .badge.shadow').count()).toBe(0)
    expect(await page.locator('[data-enforce]').count()).toBe(0)

    const ruleset = (await (await fetch(`${service.url}/v1/services/shop/ruleset`)).json()) as {
      rules: { id: string; shadow?: boolean }[]
    }
    expect(ruleset.rules.find((r) => r.id === 'export')).not.toHaveProperty('shadow')
    const audit = (await (await fetch(`${service.url}/v1/services/shop/audit`)).json()) as {
      entries: { actor: string; ruleId: string; before: unknown; after: unknown }[]
    }
    expect(audit.entries).toHaveLength(before.entries.length + 1)
    expect(audit.entries[0]).toMatchObject({
      actor: 'ops',
      ruleId: 'export',
      before: { id: 'export', shadow: true },
      after: { id: 'export' },
    })
    expect(audit.entries[0]?.after).not.toHaveProperty('shadow')
    // Nothing went wrong (no refused request either: without a token there was no button).
    expect(pageErrors).toEqual([])
  })
})
