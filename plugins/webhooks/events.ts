import type { FastifyBaseLogger } from 'fastify'
import { systemClock } from '../http/clock.js'
import { isPool, type OutboxOpener, type PgPool, type PlantStore } from '../store/index.js'
import type { AttemptOutcome, OutboxEventType, OutboxOptions, WebhookOutbox } from '../store/outbox.js'
import type { WebhooksOptions } from './options-schema.js'
import type { WebhooksConfig } from './settings.js'
import type { Feed } from '../feed/feed.js'
import { eventPayloads } from './delivery/payload.js'
import type { WebhookTracing } from './delivery/tracing.js'
import { DeliveryThread, type Delivery, type ThreadEnd } from './thread/host-side.js'
import type { DeliveryThreadData } from './thread/messages.js'
import { poolSettingsOf } from './thread/pool-settings.js'
import { DeliveryWorker } from './delivery/worker.js'

/** What the service's metrics learn of webhooks. */
export interface WebhookObserver {
  /** Events written, by type, as their commits succeed. */
  event (type: OutboxEventType, count: number): void
  attempt (endpoint: string, outcome: AttemptOutcome, seconds: number): void
  /**
   * Attempts of one endpoint and outcome at once, the duration of each (a delivery thread tells
   * them in batches): one call instead of one `attempt` each. Without it, `attempt` is called for each.
   */
  attempts? (endpoint: string, outcome: AttemptOutcome, seconds: Float64Array): void
  /** The outbox, read when metrics are scraped. */
  outbox (outbox: WebhookOutbox): void
  /** A delivery thread that ended without being asked to, and is started again: why (for the metrics). */
  threadRestart? (reason: ThreadEnd): void
  /** Traces: each event keeps its create's trace context, each attempt has a span linked to it. */
  tracing?: WebhookTracing | undefined
}

export { eventPayloads }

/** The outbox's options for these settings; `committed` is told of each commit that wrote events. */
export const outboxOptions = (config: WebhooksConfig, committed?: OutboxOptions['committed']): OutboxOptions => ({
  endpoints: config.endpoints.map(({ name, events }) => ({ name, events })),
  payloads: eventPayloads,
  ...(committed && { committed })
})

/** Where delivery runs: `thread` needs a store the thread can open on its own (SQLite, PostgreSQL). */
export interface DeliverySource {
  webhooks: WebhooksOptions
  store: string | PgPool | PlantStore
  postgres?: Record<string, unknown> | undefined
}

const NO_DELIVERY: Delivery = { start () {}, wake () {}, pause () {}, stop: async () => {} }

/**
 * Where the app delivers, and for a thread the store it opens on its own: a file or a database by
 * its URL, or a host's pool's settings (refused when they cannot be copied into a thread), not the
 * memory of this thread or a store object. A pool delivers in a thread only when asked to: the
 * thread's pool is connections of its own beside the host's.
 */
function placeOf ({ webhooks, store }: DeliverySource): { where: 'thread', store: DeliveryThreadData['store'] } | { where: 'in-process' | 'off' } {
  const where = webhooks.delivery ?? (isPool(store) ? 'in-process' : 'thread')
  if (where !== 'thread') return { where }
  if (isPool(store)) return { where, store: { poolSettings: poolSettingsOf(store) } }
  return typeof store === 'string' && /^(sqlite:|postgres(ql)?:\/\/)/.test(store) ? { where, store } : { where: 'in-process' }
}

/**
 * The route of an event, end to end:
 * 1. store commit: a create or delete writes its events into the outbox in the same commit (payloads);
 * 2. outbox: once that commit succeeds, `committed` runs;
 * 3. wake-up: `committed` wakes the delivery (rings its thread's doorbell) instead of it waiting for its next poll;
 *    with delivery 'off', it announces the commit to the delivering instances of the store (PostgreSQL's NOTIFY), which listen;
 * 4. delivery: the worker claims due events from the outbox and sends them (delivery/worker.ts, delivery/attempt.ts),
 *    in its thread (thread/thread-side.ts; with tracing, its spans made there) or, with the memory
 *    store, a store object or a pg.Pool (unless delivery is 'thread'), on this event loop;
 * 5. outcome recorded: it writes each attempt's outcome back to the outbox (record, release).
 */
export async function wireEvents (open: NonNullable<OutboxOpener>, config: WebhooksConfig, log: FastifyBaseLogger, source: DeliverySource, observer?: WebhookObserver,
  feed?: Feed): Promise<{ outbox: WebhookOutbox, delivery: Delivery }> {
  const place = placeOf(source)
  const inThread = place.where === 'thread'
  // The delivery is built on the outbox, which needs the wake-up first: a holder breaks the loop.
  const wake = { delivery: NO_DELIVERY }
  const outbox = await open({
    ...outboxOptions(config, (type, count) => {
      observer?.event(type, count)
      wake.delivery.wake()
      feed?.committed()
    }),
    // With the feed on, every create and delete writes its event, taken by an endpoint or not.
    ...(feed && { feed: true }),
    ...(observer?.tracing && { traceContext: observer.tracing.traceContext }),
    // The thread's own connection checkpoints a SQLite log.
    ...(inThread && { checkpointedElsewhere: true })
  })
  const onAttempt = (endpoint: string, outcome: AttemptOutcome, seconds: number) => observer?.attempt(endpoint, outcome, seconds)
  const tracing = observer?.tracing
  if (place.where === 'off') {
    // Delivered elsewhere: the commits, and what an admin route makes due, are announced to the
    // delivering instances of a store that can tell them (PostgreSQL); others find them at their next poll.
    const announce = outbox.announce?.bind(outbox)
    if (announce !== undefined) wake.delivery = { ...NO_DELIVERY, wake: announce }
  } else if (place.where === 'thread') {
    // With tracing, the thread starts from the tracing's own module, which makes the attempts' spans there.
    const traced = tracing?.thread
    if (tracing !== undefined && traced === undefined) log.warn({}, 'webhooks: the tracing given has no thread module: attempts made in the delivery thread have no span')
    const onAttempts = observer?.attempts?.bind(observer)
    wake.delivery = new DeliveryThread({
      data: { store: place.store, postgres: source.postgres, webhooks: source.webhooks, tracing: traced?.data },
      ...(traced && { entry: traced.entry }),
      log,
      clock: systemClock,
      onAttempt,
      ...(onAttempts && { onAttempts }),
      onRestart: observer?.threadRestart?.bind(observer)
    })
  } else {
    if (isPool(source.store) && source.webhooks.delivery === undefined) {
      log.info({}, 'webhooks: delivering on this event loop, on the host\'s pg.Pool (webhooks.delivery \'thread\' delivers in a thread, on a pool of its own made from its settings)')
    }
    wake.delivery = new DeliveryWorker({ outbox, config, log, clock: systemClock, onAttempt, tracing })
  }
  observer?.outbox(outbox)
  feed?.attach(outbox)
  return { outbox, delivery: wake.delivery }
}
