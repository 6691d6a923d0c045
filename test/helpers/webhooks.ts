import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { IncomingHttpHeaders } from 'node:http'
import { Webhook as StandardWebhook } from 'standardwebhooks'
import { Webhook as SvixWebhook } from 'svix'
import { openStore } from '../../plugins/store/index.js'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import type { AttemptRecord, ClaimedDelivery, OutboxStore, WebhookOutbox } from '../../plugins/store/outbox.js'
import { MIN_POOL_TO_LISTEN } from '../../plugins/store/postgres/outbox.js'
import type { PostgresStoreOptions } from '../../plugins/store/postgres/store.js'
import type { PlantStore } from '../../plugins/store/types.js'
import { eventPayloads } from '../../plugins/webhooks/events.js'
import type { WebhooksOptions } from '../../plugins/webhooks/options-schema.js'

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

/**
 * `outbox`, its claims and results noted as they come back: what each claim handed out, and each
 * result written. That nothing more was claimed shows that nothing more was, or will be, sent.
 */
export function watchedOutbox<O extends WebhookOutbox> (outbox: O) {
  const claims: ClaimedDelivery[][] = []
  const records: AttemptRecord[] = []
  let started = 0
  const claim = outbox.claim.bind(outbox)
  const record = outbox.record.bind(outbox)
  outbox.claim = async (wants, leaseMs) => {
    started++
    const claimed = await claim(wants, leaseMs)
    claims.push(claimed)
    return claimed
  }
  outbox.record = async (written) => {
    await record(written)
    records.push(...written)
  }
  /** Deliveries claimed so far, all claims together. */
  const claimed = () => claims.reduce((sum, { length }) => sum + length, 0)
  /** Claims started so far, come back or not. */
  const claimsStarted = () => started
  return Object.assign(outbox, { claims, records, claimed, claimsStarted })
}

/** A memory store whose outbox, once an app opens it, is watched (watchedOutbox). */
export function watchedMemoryStore () {
  const store = createMemoryStore()
  let watched: ReturnType<typeof watchedOutbox<WebhookOutbox>> | undefined
  const open = store.openOutbox.bind(store)
  store.openOutbox = async (options) => (watched = watchedOutbox(await open(options)))
  return { store, outbox: () => watched! }
}

/** A PostgreSQL store of its own on `url` (a pool that can spare a connection to listen), its outbox open for e0; closed at the test's end. */
export async function outboxOn (t: { teardown (fn: () => unknown): void }, url: string, options: PostgresStoreOptions = {}): Promise<WebhookOutbox> {
  const store = await openStore(url, { poolSize: MIN_POOL_TO_LISTEN, ...options }) as PlantStore & OutboxStore
  t.teardown(() => store.close())
  return store.openOutbox({ endpoints: [{ name: 'e0', events: ['plant.created'] }], payloads: eventPayloads })
}
