import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { WebhookEndpointNotFoundError, WebhookEventNotFoundError } from '../plugins/http/errors.js'
import { routeErrorFor } from '../plugins/store/guard.js'
import type { EventView, WebhookOutbox } from '../plugins/store/outbox.js'
import { webhooksOf, type Webhooks } from '../plugins/webhooks/index.js'
import type { WebhookEndpoint } from '../plugins/webhooks/settings.js'
import {
  EnableBodySchema, RedeliverBodySchema, RedeliveredSchema, WebhookEndpointListSchema, WebhookEndpointParamsSchema, WebhookEndpointViewSchema,
  WebhookEventListQuerySchema, WebhookEventListSchema, WebhookEventParamsSchema, WebhookEventViewSchema
} from '../schemas/webhook-admin.js'
import { guardedRoute, type GuardedRoute, type GuardedRoutesOptions, type RouteScope } from './guarded.js'
import { badRequest } from './openapi/answers.js'

export type WebhookRoutesOptions = GuardedRoutesOptions

const json = (schema: object, description: string) => ({ description, content: { 'application/json': { schema } } })
const notFoundAnswer = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: 'plant-store.Error#' } } } })
const guarded = <R>(operation: Promise<R>): Promise<R> => operation.catch((error: unknown) => { throw routeErrorFor(error) })
const iso = (date: Date | undefined) => date?.toISOString()

function eventView (event: EventView) {
  return {
    ...event,
    createdAt: event.createdAt.toISOString(),
    deliveries: event.deliveries.map((delivery) => ({
      ...delivery,
      dueAt: iso(delivery.dueAt),
      history: delivery.history.map((attempt) => ({ ...attempt, at: attempt.at.toISOString() }))
    }))
  }
}

/** The configured endpoints with their state and counts: what the endpoint routes answer. */
async function endpointViews (outbox: WebhookOutbox, configured: ReadonlyMap<string, WebhookEndpoint>) {
  const [states, stats] = await guarded(Promise.all([outbox.endpoints(), outbox.stats()]))
  return states.filter(({ name }) => configured.has(name)).map((state) => {
    const endpoint = configured.get(state.name)!
    const counts = stats.find(({ endpoint }) => endpoint === state.name)!
    return {
      name: state.name,
      host: endpoint.url.host,
      events: [...endpoint.events],
      enabled: state.enabled,
      disabledReason: state.disabledReason,
      disabledAt: iso(state.disabledAt),
      lastSuccessAt: iso(state.lastSuccessAt),
      failingSince: iso(state.failingSince),
      pending: counts.pending,
      failed: counts.failed
    }
  })
}

/** The endpoints and their state; one enabled again. */
function endpointRoutes (fastify: RouteScope, route: GuardedRoute, { outbox, config: settings, wake }: Webhooks) {
  const configured = new Map(settings.endpoints.map((endpoint) => [endpoint.name, endpoint]))
  fastify.get('/webhooks/endpoints', {
    config: route.config,
    schema: {
      ...route.docs('List webhook endpoints', 'The configured endpoints and their state; never a secret, and of a URL only its host.', 'listWebhookEndpoints'),
      response: { 200: json(WebhookEndpointListSchema, 'The endpoints'), ...route.common }
    }
  }, () => endpointViews(outbox, configured))

  fastify.post('/webhooks/endpoints/:name/enable', {
    config: route.config,
    schema: {
      ...route.docs('Enable a webhook endpoint', 'Enables an endpoint disabled by a 410 or by failing too long; its pending deliveries are sent again.', 'enableWebhookEndpoint'),
      params: WebhookEndpointParamsSchema,
      body: EnableBodySchema,
      response: { 200: json(WebhookEndpointViewSchema, 'The endpoint, enabled'), 400: badRequest({}), 404: notFoundAnswer('No endpoint of that name'), ...route.common }
    },
    // The path names everything: a request without a body is the empty object.
    preValidation: async (request) => { request.body ??= {} }
  }, async (request) => {
    const { name } = request.params
    if (!configured.has(name)) throw new WebhookEndpointNotFoundError()
    await guarded(outbox.setEnabled(name, true))
    wake()
    return (await endpointViews(outbox, configured)).find((view) => view.name === name)!
  })
}

/** The events with each delivery; one sent again by hand. */
function eventRoutes (fastify: RouteScope, route: GuardedRoute, { outbox, config: settings, wake }: Webhooks) {
  fastify.get('/webhooks/events', {
    config: route.config,
    schema: {
      ...route.docs('List webhook events', 'Events in ascending seq order, a page at a time (pass the last seq as `after`), each with its deliveries and their attempts.', 'listWebhookEvents'),
      querystring: WebhookEventListQuerySchema,
      response: { 200: json(WebhookEventListSchema, 'A page of events'), 400: badRequest({}), ...route.common }
    }
  }, async (request) => {
    const { limit = 20, after } = request.query
    return (await guarded(outbox.events({ after, limit }))).map(eventView)
  })

  fastify.get('/webhooks/events/:seq', {
    config: route.config,
    schema: {
      ...route.docs('Read a webhook event', 'One event, with its deliveries and their attempts.', 'getWebhookEvent'),
      params: WebhookEventParamsSchema,
      response: { 200: json(WebhookEventViewSchema, 'The event'), 400: badRequest({}), 404: notFoundAnswer('No such event'), ...route.common }
    }
  }, async (request) => {
    const event = await guarded(outbox.event(request.params.seq))
    if (event === undefined) throw new WebhookEventNotFoundError()
    return eventView(event)
  })

  fastify.post('/webhooks/events/:seq/redeliver', {
    config: route.config,
    schema: {
      ...route.docs('Redeliver a webhook event', 'Sends an event again, with the same webhook-id: one more attempt per delivery ' +
        '(a dead letter becomes pending); to one endpoint, or to every endpoint it went to.', 'redeliverWebhookEvent'),
      params: WebhookEventParamsSchema,
      body: RedeliverBodySchema,
      response: { 202: json(RedeliveredSchema, 'Queued again'), 400: badRequest({}), 404: notFoundAnswer('No such event or delivery'), ...route.common }
    }
  }, async (request, reply) => {
    const { endpoint } = request.body
    const redelivered = await guarded(outbox.redeliver(request.params.seq, endpoint, settings.retrySchedule.length))
    if (redelivered === 0) throw new WebhookEventNotFoundError()
    wake()
    return reply.code(202).send({ redelivered })
  })
}

/**
 * The webhook admin routes, behind the plant routes' authentication: the endpoints and their
 * state, the events with each delivery, a redelivery by hand, an endpoint enabled again.
 */
const webhookRoutes: FastifyPluginAsyncTypebox<WebhookRoutesOptions> = async (fastify, options) => {
  const route = guardedRoute(fastify, options)
  const webhooks = webhooksOf(fastify)
  endpointRoutes(fastify, route, webhooks)
  eventRoutes(fastify, route, webhooks)
}

export default webhookRoutes
