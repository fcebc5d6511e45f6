import { existsSync } from 'node:fs'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startRulesService, type RunningRulesService } from '@floodgate/rules-service'
import { IS_CI, TOKENS } from './helpers.js'

// The admin page against a slow service, in a real browser: answers that arrive late, after
// the owner has moved on, must not be shown as the state of what is on screen now.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const hasChromium = existsSync(CHROMIUM)
if (!hasChromium && IS_CI) {
  throw new Error(`the admin page test needs chromium at ${CHROMIUM} under CI=true`)
}
const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 10_000, interval: 50 })
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe.skipIf(!hasChromium)('admin page: a slow service', () => {
  let service: RunningRulesService
  let browser: Browser
  const pageErrors: string[] = []

  beforeAll(async () => {
    service = await startRulesService({
      port: 0,
      services: ['checkout', 'search'],
      requireReadToken: false,
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
    })
    const post = async (name: string, rule: unknown) => {
      const res = await fetch(`${service.url}/v1/services/${name}/rules`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKENS.admin}`, 'content-type': 'application/json' },
        body: JSON.stringify(rule),
      })
      expect(res.status).toBe(201)
    }
    await post('checkout', { id: 'checkout-rule', limit: 10, window: '1m' })
    await post('search', { id: 'search-rule', limit: 20, window: '1m' })
    await post('search', { id: 'search-other', limit: 30, window: '1m' })
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

  async function open(revision: string | RegExp = 'revision 1'): Promise<Page> {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
    page.setDefaultTimeout(10_000)
    page.on('pageerror', (err) => pageErrors.push(err.message))
    await page.goto(`${service.url}/admin/#service=checkout`)
    await page.fill('#token', TOKENS.admin)
    await page.click('#token-form button[type=submit]')
    await poll(() => page.textContent('#token-state')).toMatch(/^token set: ops/)
    await poll(() => page.textContent('#revision')).toMatch(revision)
    return page
  }

  it('a slow answer for the service left behind does not replace the one picked since', async () => {
    const page = await open()
    // search's rules and audit answer 1.5 s late; checkout's at once.
    let delayed = 0
    await page.route(/\/v1\/services\/search\/(rules|audit)/, async (route) => {
      delayed++
      await sleep(1500)
      await route.continue()
    })
    await page.selectOption('#service', 'search')
    await poll(() => delayed).toBeGreaterThan(0)
    await page.selectOption('#service', 'checkout')
    await poll(() => page.locator('#rules tbody tr').count()).toBe(1)
    // Past search's late answers: the page still shows checkout, the service picked.
    await sleep(2500)
    expect(await page.inputValue('#service')).toBe('checkout')
    const ids = await page
      .locator('#rules tbody tr')
      .evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.ruleId))
    expect(ids).toEqual(['checkout-rule'])
    expect(await page.textContent('#revision')).toBe('revision 1')
    const auditRules = await page.locator('#audit tbody tr').allTextContents()
    expect(auditRules).toHaveLength(1)
    expect(auditRules[0]).toContain('checkout-rule')
    // An edit opened now is of checkout's rule, and saves to checkout.
    await page.getByRole('button', { name: 'Edit rule checkout-rule' }).click()
    await page.fill('#f-limit', '11')
    await page.click('#save')
    await poll(() => page.textContent('#revision')).toBe('revision 2')
    await page.close()
  })

  it('a second click on Save while the first save is in flight sends nothing', async () => {
    const page = await open(/^revision \d+$/)
    const revision = Number((await page.textContent('#revision'))?.replace('revision ', ''))
    let writes = 0
    await page.route(/\/v1\/services\/checkout\/rules\/checkout-rule$/, async (route) => {
      if (route.request().method() === 'PUT') {
        writes++
        await sleep(1000)
      }
      await route.continue()
    })
    await page.getByRole('button', { name: 'Edit rule checkout-rule' }).click()
    await page.fill('#f-limit', '12')
    await page.click('#save')
    await poll(() => writes).toBe(1)
    // The same save again, by a click and by Enter in a field, while the first is in flight.
    expect(await page.isDisabled('#save')).toBe(true)
    await page.click('#save', { force: true })
    await page.press('#f-limit', 'Enter')
    await poll(() => page.textContent('#revision')).toBe(`revision ${revision + 1}`)
    await sleep(1500)
    expect(writes).toBe(1)
    expect(await page.isHidden('#conflict')).toBe(true)
    expect(await page.textContent('#revision')).toBe(`revision ${revision + 1}`)
    await page.close()
  })

  it('further clicks on Delete while the delete is in flight send nothing', async () => {
    const post = await fetch(`${service.url}/v1/services/checkout/rules`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'doomed', limit: 5, window: '1m' }),
    })
    expect(post.status).toBe(201)
    const page = await open(/^revision \d+$/)
    await poll(() => page.locator('#rules tbody tr').count()).toBe(2)
    let deletes = 0
    await page.route(/\/v1\/services\/checkout\/rules\/doomed$/, async (route) => {
      if (route.request().method() === 'DELETE') {
        deletes++
        await sleep(1000)
      }
      await route.continue()
    })
    const button = page.getByRole('button', { name: 'Delete rule doomed' })
    await button.click()
    await button.click()
    await poll(() => deletes).toBe(1)
    await button.click({ force: true })
    await button.click({ force: true })
    await poll(() => page.locator('#rules tbody tr').count()).toBe(1)
    await sleep(1500)
    expect(deletes).toBe(1)
    expect(await page.textContent('#status')).toMatch(/^Deleted rule doomed/)
    await page.close()
  })
})
