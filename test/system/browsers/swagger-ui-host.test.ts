import type { Request } from 'playwright-core'
import t from 'tap'
import { build } from '../../helpers/app.js'
import { BROWSER_TIMEOUT, launchChromium, skipWithoutChromium } from '../../helpers/chromium.js'

// A name that is not localhost, which Chromium resolves to the loopback address: a VM's name as
// a user types it, reached over plain HTTP with no TLS proxy in front.
const HOST_NAME = 'plants.example'

t.test('Swagger UI renders its operations over plain HTTP through a host name other than localhost', {
  skip: skipWithoutChromium(t),
  timeout: 3 * BROWSER_TIMEOUT
}, async (t) => {
  const { app } = await build(t)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  const context = await launchChromium(t, [`--host-resolver-rules=MAP ${HOST_NAME} 127.0.0.1`])
  const failed: string[] = []
  context.on('requestfailed', (request: Request) => {
    failed.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText}`)
  })
  const page = context.pages()[0] ?? await context.newPage()

  const documentation = await page.goto(`http://${HOST_NAME}:${port}/documentation`, { waitUntil: 'load' })
  t.equal(documentation?.status(), 200)
  t.notMatch(documentation?.headers()['content-security-policy'], /upgrade-insecure-requests/,
    'the page does not ask the browser to fetch its assets over https')
  await page.locator('.opblock.opblock-post').first().waitFor({ state: 'visible' })
  t.equal(await page.locator('.opblock-tag-section .opblock').count(), 8, 'every operation is shown')
  t.equal(await page.locator('.webhooks .opblock').count(), 3, 'and the three webhooks')
  t.same(failed, [], 'no asset failed to load')
})
