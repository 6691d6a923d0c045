import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Page, Request } from 'playwright-core'
import t from 'tap'
import { build, TOKEN } from '../../helpers/app.js'
import { BROWSER_TIMEOUT as TIMEOUT, launchChromium, skipWithoutChromium } from '../../helpers/chromium.js'

/**
 * End to end: the real app on a real socket, Swagger UI in headless Chromium (Debian's package;
 * Playwright's own browser download is not used), Authorize with the bearer token, then each
 * operation through "Try it out" as the document pre-fills it, and POST /plants with an id beyond 2^53.
 */

const SCREENSHOT = fileURLToPath(new URL('../../../.tap/screenshots/swagger-ui-post-plants.png', import.meta.url))
const WEBHOOKS_SCREENSHOT = SCREENSHOT.replace('post-plants', 'webhooks')
const BIG_ID = '9007199254740993' // 2^53 + 1: a JavaScript number cannot hold it
const BODY = `{"id": ${BIG_ID}, "name": "Browser fern", "tag": "e2e"}`

/** An operation's block in Swagger UI. */
const operationBlock = (page: Page, method: string, path: string) => page.locator(`.opblock.opblock-${method}`).filter({
  has: page.locator(`.opblock-summary-path[data-path="${path}"]`)
})

/**
 * Opens an operation, switches it to "Try it out", optionally types a body, clicks Execute and
 * waits for Swagger UI to show the answer: what was sent, what came back, and what the UI shows.
 */
async function run (page: Page, method: string, path: string, body?: string, headers: Record<string, string> = {}) {
  const operation = operationBlock(page, method, path)
  const summary = operation.locator('.opblock-summary').first()
  if (!await operation.locator('.opblock-body').isVisible()) await summary.click()
  // service/docs/index.ts sets tryItOutEnabled, so an operation opens in Try-it-out mode already: its first
  // button then reads "Cancel", and clicking it would switch the mode off.
  const tryItOut = operation.locator('.try-out__btn').first()
  await tryItOut.waitFor({ state: 'visible' })
  if (/try it out/i.test(await tryItOut.innerText())) await tryItOut.click()
  // An answer shown from an earlier run must not pass for this one.
  const clear = operation.locator('.btn-clear')
  if (await clear.isVisible()) await clear.click()
  if (body !== undefined) {
    const editor = operation.locator('textarea.body-param__text')
    await editor.fill(body)
  }
  // Header parameters (If-Match), typed into their fields.
  for (const [name, value] of Object.entries(headers)) await operation.locator(`tr[data-param-name="${name}"] input`).fill(value)
  const matches = (request: Request) =>
    request.method() === method.toUpperCase() && new URL(request.url()).pathname.startsWith(path.replace('{id}', ''))
  const sent = page.waitForRequest(matches)
  const answered = page.waitForResponse((response) => matches(response.request()))
  await operation.locator('.btn.execute').click()
  const request = await sent
  const response = await answered
  const status = response.status()
  const live = operation.locator('.responses-wrapper .live-responses-table .response')
  await live.locator('.response-col_status').filter({ hasText: String(status) }).waitFor({ state: 'visible' })
  // The body's code block (its .highlight-code container also holds a "Download" button).
  const shown = status === 204 ? '' : await live.locator('.response-col_description .highlight-code .microlight').first().innerText()
  return {
    url: new URL(request.url()),
    authorization: request.headers().authorization,
    contentType: request.headers()['content-type'],
    sentBody: request.postData() ?? '',
    ifMatch: request.headers()['if-match'],
    etag: response.headers().etag,
    status,
    received: status === 204 ? '' : await response.text(),
    shown
  }
}

t.test('Swagger UI runs the documented examples in order, creates a plant with an id past 2^53 and shows the webhooks, offline and within the CSP', {
  skip: skipWithoutChromium(t),
  timeout: 5 * TIMEOUT
}, async (t) => {
  const { app, store } = await build(t)
  const origin = await app.listen({ host: '127.0.0.1', port: 0 })

  const context = await launchChromium(t)

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

    await page.locator('.opblock.opblock-post').first().waitFor({ state: 'visible' })

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

    // The operations as a first-time user tries them, with what Swagger UI pre-fills from the
    // document: create, then list (the new plant must show), read it, delete it.
    const example = await run(page, 'post', '/plants')
    t.same(JSON.parse(example.sentBody), { id: 1, name: 'Monstera', tag: 'tropical' }, 'the body is the documented example')
    t.equal(example.status, 200, 'the example creates a plant')
    const listed = await run(page, 'get', '/plants')
    t.equal(listed.url.search, '?limit=100', 'the list is sent with the default limit and no cursor')
    t.same(JSON.parse(listed.shown), [{ id: 1, name: 'Monstera', tag: 'tropical' }], 'the list shows the plant just created')
    const read = await run(page, 'get', '/plants/{id}')
    t.equal(read.url.pathname, '/plants/1', 'the id example is the created plant')
    t.same(JSON.parse(read.shown), { name: 'Monstera', tag: 'tropical' })
    // Updated under the ETag just read, typed into If-Match: 200; once more with it, now stale: 412.
    const updated = await run(page, 'put', '/plants/{id}', undefined, { 'if-match': read.etag })
    t.equal(updated.ifMatch, read.etag, 'If-Match is sent as typed')
    t.equal(updated.status, 200, 'the pre-filled update is written')
    t.not(updated.etag, read.etag, 'with a new ETag')
    const { name, tag } = JSON.parse(updated.sentBody) as { name: string, tag?: string }
    t.same(await store.get(1n), { name, tag }, 'the plant is the body sent')
    const stale = await run(page, 'put', '/plants/{id}', undefined, { 'if-match': read.etag })
    t.equal(stale.status, 412, 'the stale ETag: 412')
    t.match(JSON.parse(stale.shown), { error: 412 }, 'shown in the Error shape')
    const removed = await run(page, 'delete', '/plants/{id}')
    t.equal(removed.status, 204, 'and deletes it')
    t.equal(await store.get(1n), undefined)

    // POST /plants with an id beyond 2^53, typed into the body editor.
    const created = await run(page, 'post', '/plants', BODY)
    t.equal(created.authorization, `Bearer ${TOKEN}`, 'the Authorize token is sent')
    t.match(created.contentType, /^application\/json/, 'sent as JSON')
    t.match(created.sentBody, new RegExp(`"id":\\s*${BIG_ID}\\b`), 'the id leaves the browser with all its digits')
    t.equal(created.status, 200, 'the service answers 200')
    t.same(JSON.parse(created.shown), { name: 'Browser fern', tag: 'e2e' }, 'the UI shows the Plant, without the id')
    t.same(await store.get(BigInt(BIG_ID)), { name: 'Browser fern', tag: 'e2e' }, 'stored under the exact id')
    t.equal(await store.get(BigInt(BIG_ID) - 1n), undefined, 'not under the id rounded to a double')

    // As the README says: the wire is exact, Swagger UI's display of it is rounded past 2^53.
    const bigList = await run(page, 'get', '/plants')
    t.match(bigList.received, `"id":${BIG_ID},`, 'the list carries the exact id')
    t.match(bigList.shown, /"id": 9007199254740992\b/, 'Swagger UI displays it rounded to a double')

    // The change feed's long-poll, as pre-filled (no cursor: from the oldest change kept), then from its next with a wait typed in.
    const changes = await run(page, 'get', '/plants/changes')
    t.equal(changes.status, 200, 'the feed answers')
    t.match(changes.received, '"event":{"type":"plant.created","timestamp":', 'its changes are the plants\' events')
    t.match(changes.received, `"id":${BIG_ID},"name":"Browser fern"`, 'the last create among them, its id exact')
    const { next } = JSON.parse(changes.received) as { next: string }
    t.match(JSON.parse(changes.shown), { changes: Array, next }, 'Swagger UI shows the page')
    const waited = await run(page, 'get', '/plants/changes', undefined, { after: next, wait: '1' })
    t.equal(waited.url.searchParams.get('wait'), '1', 'the wait is sent as typed')
    t.same(JSON.parse(waited.received), { changes: [], next }, 'a long-poll with nothing new ends empty, at the same cursor')

    mkdirSync(dirname(SCREENSHOT), { recursive: true })
    await page.locator('.responses-wrapper .live-responses-table .response').last().scrollIntoViewIfNeeded()
    await page.screenshot({ path: SCREENSHOT, fullPage: true })
    t.comment(`screenshot: ${SCREENSHOT}`)

    // The webhooks, in a section of their own: what the service sends, to read (no Try it out).
    const webhooks = page.locator('.webhooks')
    await webhooks.locator('h2', { hasText: 'Webhooks' }).waitFor({ state: 'visible' })
    const plantCreated = webhooks.locator('#operations-webhooks-plantCreated')
    t.match(await plantCreated.locator('.opblock-summary-path').getAttribute('data-path'), '/plant/webhook',
      'plantCreated under the original document\'s key')
    await plantCreated.locator('.opblock-summary').click()
    const headers = plantCreated.locator('tr[data-param-in="header"]')
    await headers.first().waitFor({ state: 'visible' })
    t.same(await headers.evaluateAll((rows) => rows.map((row) => row.getAttribute('data-param-name'))),
      ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'webhook-cursor'], 'the three signature headers and the feed\'s cursor')
    t.equal(await headers.locator('.parameter__name.required').count(), 4, 'each required')
    const event = JSON.parse(await plantCreated.locator('.opblock-section-request-body .microlight').first().innerText())
    t.same(event, { type: 'plant.created', timestamp: '2026-11-24T00:20:00.123Z', id: 1, name: 'Monstera', tag: 'tropical' },
      'the example event')
    t.same(await plantCreated.locator('.responses-table tr.response .response-col_status').allInnerTexts(), ['200', '410', 'default'],
      'the answers a receiver gives')
    t.equal(await plantCreated.locator('.try-out__btn').count(), 0, 'no Try it out')
    t.equal(await webhooks.locator('#operations-webhooks-plantDeleted .opblock-summary-path').getAttribute('data-path'), '/plant/deleted')
    t.equal(await webhooks.locator('#operations-webhooks-plantUpdated .opblock-summary-path').getAttribute('data-path'), '/plant/updated')
    await webhooks.screenshot({ path: WEBHOOKS_SCREENSHOT })
    t.comment(`screenshot: ${WEBHOOKS_SCREENSHOT}`)

    t.same(foreignRequests, [], 'no request leaves 127.0.0.1 (no CDN, no validator, no telemetry)')
    t.same(failedRequests, [], 'no request failed')
    t.same(cspViolations, [], 'no Content-Security-Policy violation')
    t.same(pageErrors, [], 'no uncaught page error')
    // Chromium logs each 4xx it fetched: the stale PUT's 412, asked for above, and nothing else.
    t.same(consoleErrors, ['Failed to load resource: the server responded with a status of 412 (Precondition Failed)'], 'no console error but the 412')
  } finally {
    await context.close()
  }
})
