import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { IncomingHttpHeaders } from 'node:http'
import { Webhook as StandardWebhook } from 'standardwebhooks'
import { Webhook as SvixWebhook } from 'svix'
import type { WebhooksOptions } from '../../plugins/webhooks/settings.js'

export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`

/** The webhooks option for endpoints on this machine's loopback (allowed), with short waits. */
export function webhooksFor (endpoints: Array<{ name?: string, url: string, secret: string, events?: WebhooksOptions['endpoints'][number]['events'] }>,
  settings: Partial<Omit<WebhooksOptions, 'endpoints'>> = {}): WebhooksOptions {
  return {
    endpoints: endpoints.map(({ name, url, secret, events }, index) => ({ name: name ?? `e${index}`, url, secrets: [secret], ...(events && { events }) })),
    retrySchedule: [200, 400],
    timeout: 2000,
    allowedNetworks: ['127.0.0.0/8'],
    ...settings
  }
}

/** Verifies a received request with both reference libraries; throws when either refuses it. */
export function verifyDelivery (secret: string, headers: IncomingHttpHeaders, body: string): void {
  const plain = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, String(value)]))
  new StandardWebhook(secret).verify(body, plain, { jsonParse: false })
  new SvixWebhook(secret).verify(body, plain)
}

/** Waits until `check` holds, up to `ms` (generous: it returns as soon as it holds); resolves whether it did. */
export async function eventually (check: () => boolean | Promise<boolean>, ms = 20_000): Promise<boolean> {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) return false
    await sleep(10)
  }
  return true
}
