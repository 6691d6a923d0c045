import { existsSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type BrowserContext, type Request } from 'playwright-core'
import t from 'tap'
import { build, TOKEN } from './helpers/app.js'

/**
 * End to end: the real app on a real socket, Swagger UI in headless Chromium (Debian's package;
 * Playwright's own browser download is not used), Authorize with the bearer token, then
 * POST /plants through "Try it out" with an id beyond 2^53.
 */

const CHROMIUM = '/usr/bin/chromium'
const SCREENSHOT = fileURLToPath(new URL('../.tap/screenshots/swagger-ui-post-plants.png', import.meta.url))
const BIG_ID = '9007199254740993' // 2^53 + 1: a JavaScript number cannot hold it
const BODY = `{"id": ${BIG_ID}, "name": "Browser fern", "tag": "e2e"}`
const TIMEOUT = 60_000 // the machine is shared and busy

const missing = !existsSync(CHROMIUM)
if (missing && process.env.CI === 'true') {
  t.fail(`${CHROMIUM} is missing, but CI installs it (apt-get install -y chromium)`)
}

t.test('Swagger UI creates a plant in a real browser, offline and within the CSP', {
  skip: missing ? `${CHROMIUM} is not installed (apt-get install -y chromium)` : false,
  timeout: 5 * TIMEOUT
}, async (t) => {
  const { app, store } = await build(t)
  const origin = await app.listen({ host: '127.0.0.1', port: 0 })

  const context: BrowserContext = await chromium.launchPersistentContext(t.testdir({}), {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run', '--disable-quic'
    ],
    viewport: { width: 1280, height: 900 }
  })
  // Also closed below, before the test's folder (Chromium's profile) is removed.
  t.teardown(() => context.close())
  context.setDefaultTimeout(TIMEOUT)

  const consoleErrors: string[] = []
  const pageErrors: string[] = []
  const cspViolations: string[] = []
  const foreignRequests: string[] = []
  const failedRequests: string[] = []

  // Every request of the browser context (pages and workers); data: and blob: never leave the browser.
  const isLocal = (url: string) => /^(data|blob):/.test(url) || new URL(url).hostname === '127.0.0.1'
  context.on('request', (request: Request) => {
    if (!isLocal(request.url())) foreignRequests.push(`${request.method()} ${request.url()}`)
  })
  context.on('requestfailed', (request: Request) => {
    failedRequests.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText}`)
  })

  // CSP violations as the browser reports them to the page, besides its console messages.
  await context.exposeFunction('__reportCspViolation', (report: string) => { cspViolations.push(report) })
  await context.addInitScript(`document.addEventListener('securitypolicyviolation', (event) => {
    window.__reportCspViolation(event.violatedDirective + ' blocked ' + (event.blockedURI || 'inline') +
      ' at ' + event.sourceFile + ':' + event.lineNumber)
  })`)

  const page = context.pages()[0] ?? await context.newPage()
  page.on('console', (message) => {
    const text = message.text()
    if (/content security policy/i.test(text)) cspViolations.push(`console: ${text}`)
    if (message.type() === 'error') consoleErrors.push(text)
  })
  page.on('pageerror', (error) => { pageErrors.push(error.stack ?? error.message) })

  try {
    const documentation = await page.goto(`${origin}/documentation`, { waitUntil: 'load', timeout: TIMEOUT })
    t.equal(documentation?.status(), 200, 'GET /documentation is 200')
    t.match(documentation?.headers()['content-security-policy'], /default-src 'self'/, 'served under helmet\'s CSP')

    const operation = page.locator('.opblock.opblock-post').filter({
      has: page.locator('.opblock-summary-path[data-path="/plants"]')
    })
    await operation.waitFor({ state: 'visible' })

    // Authorize: the bearerAuth scheme, with the test token.
    await page.locator('.auth-wrapper .btn.authorize').click()
    const dialog = page.locator('.dialog-ux .modal-ux')
    await dialog.waitFor({ state: 'visible' })
    const scheme = dialog.locator('.auth-container').filter({ hasText: 'bearerAuth' })
    await scheme.locator('input').fill(TOKEN)
    await scheme.locator('.auth-btn-wrapper .btn.authorize').click()
    // Once authorized, the scheme's Authorize button becomes Logout (aria-label "Remove authorization").
    await scheme.locator('.auth-btn-wrapper button', { hasText: 'Logout' }).waitFor()
    await dialog.locator('.btn-done, .close-modal').first().click()
    await dialog.waitFor({ state: 'detached' })
    t.match(await page.locator('.auth-wrapper .btn.authorize').getAttribute('class'), /\blocked\b/,
      'the Authorize button shows the lock closed')

    // POST /plants: expand it, "Try it out", the body with the big id, Execute. plugins/docs.ts sets
    // tryItOutEnabled, so the operation opens in Try-it-out mode already: the first button then reads
    // "Cancel" (next to "Reset") and clicking it would switch the mode off, so only "Try it out" is clicked.
    await operation.locator('.opblock-summary').first().click()
    const tryItOut = operation.locator('.try-out__btn').first()
    await tryItOut.waitFor({ state: 'visible' })
    if (/try it out/i.test(await tryItOut.innerText())) await tryItOut.click()
    const body = operation.locator('textarea.body-param__text')
    await body.waitFor({ state: 'visible' })
    await body.fill(BODY)
    t.equal(await body.inputValue(), BODY, 'the body is in the editor as typed')

    const sent = page.waitForRequest((request) => request.method() === 'POST' && new URL(request.url()).pathname === '/plants')
    const answered = page.waitForResponse((response) => response.request().method() === 'POST' &&
      new URL(response.url()).pathname === '/plants')
    await operation.locator('.btn.execute').click()
    const request = await sent
    const response = await answered

    const sentBody = request.postData() ?? ''
    t.equal(request.headers().authorization, `Bearer ${TOKEN}`, 'the Authorize token is sent')
    t.match(request.headers()['content-type'], /^application\/json/, 'sent as JSON')
    t.match(sentBody, new RegExp(`"id":\\s*${BIG_ID}\\b`), 'the id leaves the browser with all its digits')
    t.equal(response.status(), 200, 'the service answers 200')

    // The response section of Swagger UI: the live answer, not the documented ones.
    const live = operation.locator('.responses-wrapper .live-responses-table .response')
    await live.locator('.response-col_status').filter({ hasText: '200' }).waitFor({ state: 'visible' })
    t.equal((await live.locator('.response-col_status').first().innerText()).trim(), '200', 'the UI shows 200')
    // The body's code block (its .highlight-code container also holds a "Download" button).
    const shown = await live.locator('.response-col_description .highlight-code .microlight').first().innerText()
    t.same(JSON.parse(shown), { name: 'Browser fern', tag: 'e2e' }, 'the UI shows the Plant, without the id')

    t.same(await store.get(BigInt(BIG_ID)), { name: 'Browser fern', tag: 'e2e' }, 'stored under the exact id')
    t.equal(await store.get(BigInt(BIG_ID) - 1n), undefined, 'not under the id rounded to a double')

    mkdirSync(dirname(SCREENSHOT), { recursive: true })
    await live.first().scrollIntoViewIfNeeded()
    await page.screenshot({ path: SCREENSHOT, fullPage: true })
    t.comment(`screenshot: ${SCREENSHOT}`)

    t.same(foreignRequests, [], 'no request leaves 127.0.0.1 (no CDN, no validator, no telemetry)')
    t.same(failedRequests, [], 'no request failed')
    t.same(cspViolations, [], 'no Content-Security-Policy violation')
    t.same(pageErrors, [], 'no uncaught page error')
    t.same(consoleErrors, [], 'no console error')
  } finally {
    await context.close()
  }
})
