import type { onRequestHookHandler, onResponseHookHandler, onSendHookHandler, RouteOptions } from 'fastify'

interface RouteHooks {
  onRequest: onRequestHookHandler
  onResponse: onResponseHookHandler
  onSend: onSendHookHandler
}

/** From an onRoute hook: adds `hook` to the route being declared, after the route's own hooks. */
export function addRouteHook<N extends keyof RouteHooks> (route: RouteOptions, name: N, hook: RouteHooks[N]): void {
  const own = route[name] as RouteHooks[N] | RouteHooks[N][] | undefined
  route[name] = [...own === undefined ? [] : [own].flat(), hook] as RouteOptions[N]
}
