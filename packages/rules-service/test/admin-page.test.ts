import { existsSync, mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startRulesService, type RunningRulesService } from '@floodgate/rules-service'
import { IS_CI, TOKENS } from './helpers.js'

// The admin page in a real browser: Debian's chromium, driven by playwright-core.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const hasChromium = existsSync(CHROMIUM)
if (!hasChromium && IS_CI) {
  throw new Error(
    `the admin page test needs chromium at ${CHROMIUM} under CI=true (apt-get install -y chromium)`,
  )
}
// Waits for the page, bounded; generous so a loaded CI machine does not flake.
const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 10_000, interval: 50 })
const ARTIFACTS = fileURLToPath(new URL('../test-artifacts/', import.meta.url))

describe.skipIf(!hasChromium)('admin page in chromium', () => {
  let service: RunningRulesService
  let browser: Browser
  let page: Page
  const pageErrors: string[] = []

  const shot = (name: string) =>
    page.screenshot({ path: `${ARTIFACTS}admin-${name}.png`, fullPage: true })

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true })
    service = await startRulesService({
      port: 0,
      services: ['checkout', 'search'],
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
    })
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    })
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
    page.setDefaultTimeout(10_000)
    page.on('pageerror', (err) => pageErrors.push(err.message))
    page.on('console', (msg) => {
      if (msg.type() === 'error') pageErrors.push(msg.text())
    })
  }, 30_000)

  afterAll(async () => {
    await browser?.close()
    await service?.stop()
  })

  it('creates a rule, shows an invalid limit inline, and deletes the rule', async () => {
    await page.goto(`${service.url}/admin/`)
    await poll(() => page.locator('#service option').count()).toBe(2)
    await page.selectOption('#service', 'checkout')
    await poll(() => page.textContent('#revision')).toBe('revision 0')

    // Without a token the page is read-only: no edit controls, and it says what to do.
    expect(await page.isHidden('#new-rule')).toBe(true)
    expect(await page.textContent('#read-only')).toMatch(/token that may write/)

    await page.fill('#token', TOKENS.admin)
    await page.click('#token-form button[type=submit]')
    await poll(() => page.textContent('#token-state')).toMatch(/token set: ops \(admin/)
    await page.selectOption('#service', 'checkout')
    await page.click('#new-rule')
    await page.fill('#f-id', 'api-per-ip')
    await page.fill('#f-match', 'GET /api/**')
    await page.fill('#f-limit', '100')
    await page.fill('#f-window', '1m')
    await page.selectOption('#f-onLimit', 'reject-503')
    expect(JSON.parse(await page.inputValue('#f-json'))).toEqual({
      id: 'api-per-ip',
      match: 'GET /api/**',
      limit: 100,
      window: '1m',
      onLimit: { action: 'reject', status: 503 },
    })
    await page.click('#save')
    const row = page.locator('#rules tbody tr[data-rule-id="api-per-ip"]')
    await poll(() => row.count()).toBe(1)
    expect(await row.textContent()).toContain('GET /api/**')
    expect(await row.textContent()).toContain('100/1m')
    expect(await page.textContent('#revision')).toBe('revision 1')
    await poll(() => page.locator('#audit tbody tr').count()).toBe(1)
    expect(await page.textContent('#audit tbody tr')).toMatch(/ops.*create.*api-per-ip/s)
    await shot('1-created')

    // An invalid limit: the service's message appears next to the limit field; nothing stored.
    await row.getByRole('button', { name: 'Edit rule api-per-ip' }).click()
    await page.fill('#f-limit', '-1')
    await page.click('#save')
    const limitError = page.locator('.field-error[data-for="limit"]')
    await poll(() => limitError.textContent()).toBe('expected a positive integer, got -1')
    expect(await page.getAttribute('#f-limit', 'aria-invalid')).toBe('true')
    expect(await page.textContent('#editor-errors')).toContain(
      'rules[0].limit: expected a positive integer, got -1',
    )
    await shot('2-invalid-limit')
    const stored = (await (
      await fetch(`${service.url}/v1/services/checkout/rules/api-per-ip`)
    ).json()) as { rule: { limit: number } }
    expect(stored.rule.limit).toBe(100)

    // Fix it and save: an edit.
    await page.fill('#f-limit', '50')
    await page.click('#save')
    await poll(() => row.textContent()).toContain('50/1m')
    expect(await page.isHidden('#editor')).toBe(true)

    // Delete takes two clicks.
    const del = row.getByRole('button', { name: 'Delete rule api-per-ip' })
    await del.click()
    expect(await del.textContent()).toBe('Really delete?')
    await del.click()
    await poll(() => row.count()).toBe(0)
    expect(await page.textContent('#revision')).toBe('revision 3')
    await poll(() => page.locator('#audit tbody tr').count()).toBe(3)
    expect(await page.textContent('#audit tbody tr:first-child')).toMatch(
      /ops.*delete.*api-per-ip/s,
    )
    await shot('3-deleted')

    const set = (await (await fetch(`${service.url}/v1/services/checkout/ruleset`)).json()) as {
      rules: unknown[]
    }
    expect(set.rules).toEqual([])
    expect(pageErrors.filter((e) => !/status of 40[013]/.test(e))).toEqual([])
  })

  it("edits deny and allow addresses, keeps a list's other fields, and shows a bad CIDR inline", async () => {
    await page.selectOption('#service', 'search')
    await page.click('#new-rule')
    await page.fill('#f-id', 'listed')
    await page.fill('#f-limit', '10')
    await page.fill('#f-window', '1m')
    await page.fill('#f-deny', '203.0.113.0/24\n2001:db8:bad::/48')
    await page.fill('#f-allow', '10.0.0.0/8')
    expect(JSON.parse(await page.inputValue('#f-json'))).toEqual({
      id: 'listed',
      limit: 10,
      window: '1m',
      deny: { ips: ['203.0.113.0/24', '2001:db8:bad::/48'] },
      allow: { ips: ['10.0.0.0/8'] },
    })
    // Fields the form has no input for stay in the JSON: a status, key values.
    const json = JSON.parse(await page.inputValue('#f-json')) as Record<string, unknown>
    json.deny = { ips: ['203.0.113.0/24'], keys: { 'header:x-api-key': ['leaked'] }, status: 404 }
    await page.click('#json-details summary')
    await page.fill('#f-json', JSON.stringify(json))
    expect(await page.inputValue('#f-deny')).toBe('203.0.113.0/24')
    await page.fill('#f-deny', '203.0.113.0/24, 198.51.100.7')
    await page.click('#save')
    const row = page.locator('#rules tbody tr[data-rule-id="listed"]')
    await poll(() => row.count()).toBe(1)
    const url = `${service.url}/v1/services/search/rules/listed`
    const stored = async () => ((await (await fetch(url)).json()) as { rule: unknown }).rule
    expect(await stored()).toMatchObject({
      deny: {
        ips: ['203.0.113.0/24', '198.51.100.7'],
        keys: { 'header:x-api-key': ['leaked'] },
        status: 404,
      },
      allow: { ips: ['10.0.0.0/8'] },
    })

    // A prefix longer than the address: named next to the field, nothing stored.
    await row.getByRole('button', { name: 'Edit rule listed' }).click()
    await page.fill('#f-deny', '10.0.0.0/33')
    await page.click('#save')
    await poll(() => page.locator('.field-error[data-for="deny"]').textContent()).toBe(
      `expected a prefix length from 0 to 32 after the '/', got "10.0.0.0/33"`,
    )
    expect(await page.getAttribute('#f-deny', 'aria-invalid')).toBe('true')
    await shot('4-bad-cidr')
    expect(await stored()).toMatchObject({ deny: { ips: ['203.0.113.0/24', '198.51.100.7'] } })
    expect(pageErrors.filter((e) => !/status of 40[013]/.test(e))).toEqual([])
  })

  it('shows a match: false rule as matching no HTTP request, and keeps match: false through the form', async () => {
    const url = `${service.url}/v1/services/checkout/rules`
    const auth = { authorization: `Bearer ${TOKENS.admin}`, 'content-type': 'application/json' }
    const events = { id: 'ws', match: false, key: 'user', limit: 3, window: '10s' }
    const created = await fetch(url, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify(events),
    })
    expect(created.status).toBe(201)
    const stored = async (id: string) =>
      ((await (await fetch(`${url}/${id}`)).json()) as { rule: unknown }).rule

    await page.selectOption('#service', 'search')
    await page.selectOption('#service', 'checkout')
    const row = page.locator('#rules tbody tr[data-rule-id="ws"]')
    await poll(() => row.count()).toBe(1)
    expect(await row.locator('td[data-label="Match"]').textContent()).toBe(
      'no HTTP request (limiter.limit() only)',
    )

    // Editing another field keeps match: false (the box is ticked, the text field disabled).
    await row.getByRole('button', { name: 'Edit rule ws' }).click()
    expect(await page.isChecked('#f-matchNone')).toBe(true)
    expect(await page.isDisabled('#f-match')).toBe(true)
    await page.fill('#f-limit', '4')
    expect(JSON.parse(await page.inputValue('#f-json'))).toEqual({ ...events, limit: 4 })
    await page.click('#save')
    await poll(() => row.textContent()).toContain('4/10s')
    expect(await stored('ws')).toEqual({ ...events, limit: 4 })
    await shot('5-match-false')

    // A new rule: ticking the box writes match: false; unticking it gives the text field back.
    await page.click('#new-rule')
    expect(await page.isChecked('#f-matchNone')).toBe(false)
    expect(await page.isDisabled('#f-match')).toBe(false)
    await page.fill('#f-id', 'jobs')
    await page.fill('#f-match', '/jobs/**')
    await page.fill('#f-limit', '10')
    await page.fill('#f-window', '1m')
    await page.check('#f-matchNone')
    expect(await page.isDisabled('#f-match')).toBe(true)
    expect(JSON.parse(await page.inputValue('#f-json'))).toMatchObject({ match: false })
    await page.uncheck('#f-matchNone')
    expect(JSON.parse(await page.inputValue('#f-json'))).toMatchObject({ match: '/jobs/**' })
    await page.check('#f-matchNone')
    await page.click('#save')
    const jobs = page.locator('#rules tbody tr[data-rule-id="jobs"]')
    await poll(() => jobs.count()).toBe(1)
    expect(await stored('jobs')).toEqual({ id: 'jobs', match: false, limit: 10, window: '1m' })

    // The other way: an HTTP rule loses match: false when the box is unticked.
    await jobs.getByRole('button', { name: 'Edit rule jobs' }).click()
    await page.uncheck('#f-matchNone')
    await page.fill('#f-match', 'POST /jobs')
    await page.click('#save')
    await poll(() => jobs.textContent()).toContain('POST /jobs')
    expect(await stored('jobs')).toEqual({
      id: 'jobs',
      match: 'POST /jobs',
      limit: 10,
      window: '1m',
    })
    expect(pageErrors.filter((e) => !/status of 40[013]/.test(e))).toEqual([])
  })
})
