import { existsSync, mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ruleSchema } from '@floodgate/core/rules'
import { startRulesService, type RunningRulesService } from '@floodgate/rules-service'
import { IS_CI, TOKENS } from './helpers.js'

// The admin page as owners with different tokens use it, in a real browser: who sees edit
// controls, a colleague's change met on save, the audit's pages, filter and highlights, the
// description, errors beside Save, and a phone-width screen. Content and layout are checked
// (text, visibility, boxes, scroll width), not pixels.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const hasChromium = existsSync(CHROMIUM)
if (!hasChromium && IS_CI) {
  throw new Error(`the admin page test needs chromium at ${CHROMIUM} under CI=true`)
}
const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 10_000, interval: 50 })
const ARTIFACTS = fileURLToPath(new URL('../test-artifacts/', import.meta.url))

describe.skipIf(!hasChromium)('admin page: tokens, conflicts, audit, layout', () => {
  let service: RunningRulesService
  let browser: Browser
  const pageErrors: string[] = []

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true })
    service = await startRulesService({
      port: 0,
      services: ['checkout', 'search'],
      requireReadToken: false,
      tokens: [
        { name: 'ops', role: 'admin', token: TOKENS.admin },
        { name: 'checkout-team', role: 'write', token: TOKENS.checkout, services: ['checkout'] },
        { name: 'hosts', role: 'read', token: TOKENS.reader },
      ],
    })
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
    })
  }, 30_000)

  afterAll(async () => {
    await browser?.close()
    await service?.stop()
    expect(pageErrors).toEqual([])
  })

  /** The API as a colleague (or a script) uses it. */
  const api = async (
    method: string,
    path: string,
    body?: unknown,
    token: string = TOKENS.admin,
  ) => {
    const res = await fetch(`${service.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined
          ? {}
          : {
              'content-type':
                method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
            }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    expect(res.status, `${method} ${path}: ${await res.clone().text()}`).toBeLessThan(300)
    return (await res.json()) as Record<string, unknown>
  }

  /** A page with `token` pasted, showing `service`. */
  async function open(token: string | undefined, service: string, width = 1200): Promise<Page> {
    const page = await browser.newPage({ viewport: { width, height: 900 } })
    page.setDefaultTimeout(10_000)
    page.on('pageerror', (err) => pageErrors.push(err.message))
    await page.goto(`${service_url()}/admin/#service=${service}`)
    await poll(() => page.locator('#service option').count()).toBe(2)
    if (token !== undefined) {
      await page.fill('#token', token)
      await page.click('#token-form button[type=submit]')
      await poll(() => page.textContent('#token-state')).toMatch(/^token set/)
    }
    await poll(() => page.inputValue('#service')).toBe(service)
    await poll(() => page.textContent('#revision')).toMatch(/^revision \d+$/)
    return page
  }
  const service_url = () => service.url

  it('shows edit controls only to a token that may change the service', async () => {
    await api('PUT', '/v1/services/search/rules/s1', { id: 's1', limit: 5, window: '1s' })
    await api('PUT', '/v1/services/checkout/rules/c1', { id: 'c1', limit: 5, window: '1s' })

    const reader = await open(TOKENS.reader, 'checkout')
    expect(await reader.textContent('#token-state')).toMatch(/token set: hosts \(read/)
    await poll(() => reader.locator('#rules tbody tr').count()).toBe(1)
    expect(await reader.isHidden('#new-rule')).toBe(true)
    expect(await reader.locator('#rules button').count()).toBe(0)
    expect(await reader.isVisible('#read-only')).toBe(true)
    expect(await reader.isHidden('#new-service')).toBe(true)
    await reader.close()

    // A write token for checkout: controls there, none on search; never "new service".
    const team = await open(TOKENS.checkout, 'checkout')
    await poll(() => team.locator('#rules button').count()).toBe(2)
    expect(await team.isVisible('#new-rule')).toBe(true)
    expect(await team.isHidden('#new-service')).toBe(true)
    await team.selectOption('#service', 'search')
    await poll(() => team.locator('#rules tbody tr[data-rule-id="s1"]').count()).toBe(1)
    expect(await team.locator('#rules button').count()).toBe(0)
    expect(await team.isHidden('#new-rule')).toBe(true)
    await team.close()

    const admin = await open(TOKENS.admin, 'search')
    await poll(() => admin.locator('#rules button').count()).toBe(2)
    expect(await admin.isVisible('#new-service')).toBe(true)
    await admin.close()
  })

  it("shows a colleague's change met on save, and saves only when asked", async () => {
    await api('PUT', '/v1/services/checkout/rules/orders', {
      id: 'orders',
      description: 'order placement',
      limit: 100,
      window: '1m',
    })
    const page = await open(TOKENS.admin, 'checkout')
    const row = page.locator('#rules tbody tr[data-rule-id="orders"]')
    await poll(() => row.count()).toBe(1)
    // The description is shown with the rule.
    expect(await row.locator('.description').textContent()).toBe('order placement')
    await row.getByRole('button', { name: 'Edit rule orders' }).click()
    await page.fill('#f-limit', '80')

    // Meanwhile a colleague lowers the limit and changes the window.
    await api('PATCH', '/v1/services/checkout/rules/orders', { limit: 50, window: '2m' })
    await page.click('#save')
    await poll(() => page.isVisible('#conflict')).toBe(true)
    expect(await page.textContent('#save-message')).toMatch(/Not saved: someone changed/)
    expect(await page.textContent('#conflict-changes')).toMatch(/ops patched rule orders/)
    const diffRow = (field: string) => page.locator(`#conflict-diff tr[data-field="${field}"]`)
    expect(await diffRow('limit').locator('td').allTextContents()).toEqual(['100', '50', '80'])
    expect(await diffRow('limit').locator('td.changed-theirs').textContent()).toBe('50')
    expect(await diffRow('limit').locator('td.changed-mine').textContent()).toBe('80')
    // The window: their change, which saving the draft (opened with 1m) would undo.
    expect(await diffRow('window').locator('td').allTextContents()).toEqual(['1m', '2m', '1m'])
    await page.screenshot({ path: `${ARTIFACTS}admin-conflict.png`, fullPage: true })

    // Save is off until a choice is made; the colleague's change is still there.
    expect(await page.isDisabled('#save')).toBe(true)
    let stored = (await api('GET', '/v1/services/checkout/rules/orders')) as {
      rule: Record<string, unknown>
    }
    expect(stored.rule).toMatchObject({ limit: 50, window: '2m' })

    // "Discard mine, edit theirs": the form now holds their rule.
    await page.click('#conflict-theirs')
    await poll(() => page.inputValue('#f-limit')).toBe('50')
    expect(await page.inputValue('#f-window')).toBe('2m')
    expect(await page.isHidden('#conflict')).toBe(true)

    // Again, and this time overwrite knowingly.
    await page.fill('#f-limit', '70')
    await api('PATCH', '/v1/services/checkout/rules/orders', { limit: 60 })
    await page.click('#save')
    await poll(() => page.isVisible('#conflict')).toBe(true)
    expect(await diffRow('limit').locator('td').allTextContents()).toEqual(['50', '60', '70'])
    await page.click('#conflict-overwrite')
    await poll(() => page.isHidden('#editor')).toBe(true)
    stored = (await api('GET', '/v1/services/checkout/rules/orders')) as {
      rule: Record<string, unknown>
    }
    expect(stored.rule).toMatchObject({ limit: 70, window: '2m' })
    await page.close()
  })

  it('a new rule whose id a colleague created meanwhile: their rule shown, replaced only when asked', async () => {
    const page = await open(TOKENS.admin, 'checkout')
    await page.click('#new-rule')
    await page.fill('#f-id', 'dup')
    await page.fill('#f-rate', '10/1s')
    await api('POST', '/v1/services/checkout/rules', { id: 'dup', rate: '3/1s' })
    await page.click('#save')
    await poll(() => page.isVisible('#conflict')).toBe(true)
    const rate = page.locator('#conflict-diff tr[data-field="rate"] td')
    expect(await rate.allTextContents()).toEqual(['—', '3/1s', '10/1s'])
    await page.click('#conflict-overwrite')
    await poll(() => page.isHidden('#editor')).toBe(true)
    const stored = (await api('GET', '/v1/services/checkout/rules/dup')) as {
      rule: Record<string, unknown>
    }
    expect(stored.rule).toEqual({ id: 'dup', rate: '10/1s' })
    await page.close()
  })

  it('shows a refused save next to the Save button', async () => {
    const page = await open(TOKENS.admin, 'checkout')
    const row = page.locator('#rules tbody tr[data-rule-id="c1"]')
    await row.getByRole('button', { name: 'Edit rule c1' }).click()
    await page.fill('#f-limit', '-1')
    await page.click('#save')
    await poll(() => page.textContent('#save-message')).toMatch(/Not saved: fix the fields/)
    await poll(() => page.isVisible('#editor-errors')).toBe(true)
    const save = (await page.locator('#save').boundingBox())!
    const message = (await page.locator('#save-message').boundingBox())!
    const errors = (await page.locator('#editor-errors').boundingBox())!
    // The message is on Save's line, the list right above the button row.
    expect(Math.abs(message.y - save.y)).toBeLessThan(save.height)
    expect(save.y - (errors.y + errors.height)).toBeLessThan(40)
    expect(save.y - (errors.y + errors.height)).toBeGreaterThanOrEqual(0)
    await page.close()
  })

  it('pages the audit, filters it by rule, and marks what each change changed', async () => {
    // 25 changes: a create, then patches alternating between two rules.
    await api('PUT', '/v1/services/search/rules/a', { id: 'a', limit: 1, window: '1m' })
    await api('PUT', '/v1/services/search/rules/b', { id: 'b', limit: 1, window: '1m' })
    for (let i = 2; i <= 24; i++) {
      await api('PATCH', `/v1/services/search/rules/${i % 2 === 0 ? 'a' : 'b'}`, { limit: i })
    }
    const page = await open(TOKENS.admin, 'search')
    const rows = page.locator('#audit tbody tr')
    await poll(() => rows.count()).toBe(20)
    expect(await page.isEnabled('#audit-older')).toBe(true)
    expect(await page.isDisabled('#audit-newer')).toBe(true)
    // The newest: b's limit 23 → ... no: the newest patch is a's (24), from 22.
    const newest = rows.first()
    expect(await newest.locator('[data-field="limit"] del').textContent()).toBe('22')
    expect(await newest.locator('[data-field="limit"] ins').textContent()).toBe('24')
    // Fields that did not change are not listed.
    expect(await newest.locator('[data-field="window"]').count()).toBe(0)
    const ids = async () =>
      await rows.evaluateAll((trs) => trs.map((tr) => Number((tr as HTMLElement).dataset.entryId)))
    const first = await ids()

    await page.click('#audit-older')
    await poll(async () => (await ids())[0]).toBeLessThan(first.at(-1)!)
    const second = await ids()
    // search had one create of s1 before: 1 + 2 + 23 = 26 entries, 20 then 6.
    expect(second).toHaveLength(6)
    expect(await page.isDisabled('#audit-older')).toBe(true)
    await page.click('#audit-newer')
    await poll(ids).toEqual(first)

    await page.selectOption('#audit-rule', 'b')
    await poll(
      async () => new Set(await rows.locator('td[data-label="Rule"]').allTextContents()),
    ).toEqual(new Set(['b']))
    expect(await rows.count()).toBe(12)
    // A create marks every field as added.
    const create = rows.last()
    expect(await create.locator('[data-field="id"] ins').textContent()).toBe('b')
    expect(await create.locator('del').count()).toBe(0)
    await page.close()
  })

  it("shows a tiered rule's limit per tier, and keeps its tiers, ban and count through the form", async () => {
    const tiered = {
      id: 'per-plan',
      key: 'user',
      window: '1m',
      count: 'failed',
      ban: { after: 5, within: '1m', for: '15m' },
      tiers: {
        by: 'header:x-plan',
        values: { free: { limit: 100 }, pro: { limit: 1000 }, batch: { rate: '10000/1h' } },
        default: 'free',
      },
    }
    await api('PUT', '/v1/services/checkout/rules/per-plan', tiered)
    const page = await open(TOKENS.admin, 'checkout')
    const row = page.locator('#rules tbody tr[data-rule-id="per-plan"]')
    await poll(() => row.count()).toBe(1)
    expect(await row.locator('td[data-label="Limit"]').textContent()).toBe(
      'batch 10000/1h, free 100/1m, pro 1000/1m by header:x-plan; others: free',
    )
    // Edited in the form, the fields the form has no input for are kept as they were.
    await row.getByRole('button', { name: 'Edit rule per-plan' }).click()
    await page.fill('#f-description', 'plans: free and pro')
    await page.click('#save')
    await poll(async () => (await api('GET', '/v1/services/checkout/rules/per-plan')).rule).toEqual(
      { ...tiered, description: 'plans: free and pro' },
    )
    await page.close()
  })

  it('offers every algorithm a rule may name, and edits an adaptive rule keeping its settings', async () => {
    const adaptive = {
      id: 'shed',
      algorithm: 'adaptive',
      key: 'header:x-api-key',
      adaptive: { target: '250ms', percentile: 99, minLimit: 5, maxLimit: 500, gate: 'api' },
    }
    await api('PUT', '/v1/services/checkout/rules/shed', adaptive)
    const page = await open(TOKENS.admin, 'checkout')
    const row = page.locator('#rules tbody tr[data-rule-id="shed"]')
    await poll(() => row.count()).toBe(1)
    expect(await row.locator('td[data-label="Limit"]').textContent()).toBe(
      'adaptive: p99 ≤ 250ms, 5-500 in flight, gate api',
    )
    // The form's list is the rule format's: an algorithm missing from it would be changed to
    // the default by any edit through the form.
    const offered = await page
      .locator('#f-algorithm option')
      .evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value))
    const schema = ruleSchema.toJSONSchema() as {
      properties: { algorithm: { enum: readonly string[] } }
    }
    expect(offered).toEqual(['', ...schema.properties.algorithm.enum])
    await row.getByRole('button', { name: 'Edit rule shed' }).click()
    expect(await page.inputValue('#f-algorithm')).toBe('adaptive')
    await page.fill('#f-description', 'shed load when p99 passes 250 ms')
    await page.click('#save')
    await poll(async () => (await api('GET', '/v1/services/checkout/rules/shed')).rule).toEqual({
      ...adaptive,
      description: 'shed load when p99 passes 250 ms',
    })
    await page.close()
  })

  it('fits a 390 px wide phone screen', async () => {
    await api(
      'PUT',
      '/v1/services/checkout/rules/a-rule-with-a-rather-long-identifier-for-exports',
      {
        id: 'a-rule-with-a-rather-long-identifier-for-exports',
        description: 'exports are heavy: a few per hour per user, queued rather than refused',
        match: 'POST /api/v1/exports/{format}/generate/**',
        key: ['user', 'header:x-tenant-identifier'],
        limit: 3,
        window: '1h',
        onLimit: { action: 'queue', maxWait: '2s' },
      },
    )
    const page = await open(TOKENS.admin, 'checkout', 390)
    await poll(() => page.locator('#rules tbody tr').count()).toBeGreaterThan(2)
    const width = () => page.evaluate(() => document.documentElement.scrollWidth)
    expect(await width()).toBeLessThanOrEqual(390)
    // Every cell of the rules list is readable: inside the screen.
    const right = await page
      .locator('#rules td')
      .evaluateAll((tds) => Math.max(...tds.map((td) => td.getBoundingClientRect().right)))
    expect(right).toBeLessThanOrEqual(390)
    await page.screenshot({ path: `${ARTIFACTS}admin-390-list.png`, fullPage: true })
    // The editor, open, too.
    await page
      .locator('#rules tbody tr[data-rule-id="a-rule-with-a-rather-long-identifier-for-exports"]')
      .getByRole('button', { name: /^Edit/ })
      .click()
    await poll(() => page.isVisible('#editor')).toBe(true)
    expect(await width()).toBeLessThanOrEqual(390)
    await page.screenshot({ path: `${ARTIFACTS}admin-390-editor.png`, fullPage: true })
    await page.close()
  })
})
