import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { systemClock, type Clock } from '../http/clock.js'
import { outboxOpenerOf } from '../store/index.js'
import type { WebhookOutbox } from '../store/outbox.js'
import { eventPayloads } from '../webhooks/delivery/payload.js'
import { Upkeep } from '../webhooks/delivery/upkeep.js'
import { Feed } from './feed.js'
import type { FeedHandle } from './handle.js'
import type { FeedConfig } from './settings.js'

export { Feed }

export interface FeedPluginOptions {
  config: FeedConfig
  /** The webhooks open the outbox (and attach it to the feed): the feed does not open its own. */
  webhooks: boolean
  /** The host's handle on the feed (the plugin's feedHandle option), attached once the feed is there. */
  handle?: FeedHandle | undefined
  clock?: Clock | undefined
}

const DECORATOR = 'plantStoreFeed'

/** The scope's feed; undefined when the feed is off, or the store keeps no outbox (a host's own store). */
export const feedOf = (fastify: FastifyInstance): Feed | undefined =>
  (fastify as unknown as Record<typeof DECORATOR, Feed | undefined>)[DECORATOR]

/**
 * The change feed: from its registration on, every create, update and delete writes its event (in the
 * plant's own commit). Without webhooks it opens the store's outbox itself and prunes events past
 * its retention on the upkeep's timer; with them, the webhooks open it with the feed on and keep
 * events for the longer of both retentions.
 */
export default fp<FeedPluginOptions>(async function feed (fastify, { config, webhooks, handle, clock = systemClock }) {
  const open = outboxOpenerOf(fastify)
  if (open === undefined) {
    fastify.decorate(DECORATOR, undefined)
    return
  }
  const changes = new Feed(config, clock)
  if (!webhooks) {
    let outbox: WebhookOutbox
    try {
      outbox = await open({ endpoints: [], payloads: eventPayloads, feed: true, committed: changes.committed, clock })
    } catch (error) {
      // A database user that may not make the feed's tables (an administrator made the plants
      // table): the service runs as before, without the feed, and says what to do.
      fastify.log.warn(`plant-store: the change feed is off: ${(error as Error).message}; have an administrator run the SQL that ` +
        '`node server.mjs schema-sql` prints to make its tables, or set the feed off')
      fastify.decorate(DECORATOR, undefined)
      return
    }
    changes.attach(outbox)
    const upkeep = new Upkeep({ outbox, config: { disableAfter: Number.POSITIVE_INFINITY, retention: config.retention }, clock, log: fastify.log })
    fastify.addHook('onReady', async () => upkeep.start())
    fastify.addHook('onClose', () => upkeep.stop())
  }
  fastify.decorate(DECORATOR, changes)
  handle?.attach(changes)
  // Long-polls end at once, answered, so that the server's close does not wait for them.
  fastify.addHook('preClose', () => changes.close())
}, { name: 'plant-store-feed', dependencies: ['plant-store-store'] })
