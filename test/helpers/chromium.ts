import { existsSync } from 'node:fs'
import { chromium, type BrowserContext } from 'playwright-core'
import type { Test } from 'tap'

/** Debian's Chromium package; Playwright's own browser download is not used. */
export const CHROMIUM = '/usr/bin/chromium'
export const BROWSER_TIMEOUT = 60_000 // the machine is shared and busy

/** The skip option of a browser test: a reason when Chromium is missing (a failure on CI, which installs it). */
export function skipWithoutChromium (t: Test): string | false {
  if (existsSync(CHROMIUM)) return false
  if (process.env.CI === 'true') t.fail(`${CHROMIUM} is missing, but CI installs it (apt-get install -y chromium)`)
  return `${CHROMIUM} is not installed (apt-get install -y chromium)`
}

/** Headless Chromium with a fresh profile in the test's folder, closed when the test ends; `args` adds switches. */
export async function launchChromium (t: Test, args: string[] = []): Promise<BrowserContext> {
  const context = await chromium.launchPersistentContext(t.testdir({}), {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run', '--disable-quic', ...args
    ],
    viewport: { width: 1280, height: 900 }
  })
  // Closed before the test's folder (Chromium's profile) is removed.
  t.teardown(() => context.close())
  context.setDefaultTimeout(BROWSER_TIMEOUT)
  return context
}
