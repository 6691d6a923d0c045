import { once } from 'node:events'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import type pg from 'pg'
import { connect } from './postgres.js'
import type { Teardown } from './server-process.js'
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js'

// The ways a PostgreSQL server fails a store, made for real: the store tier checks which of the
// store's bounds ends each (test/stores/store-contract.test.ts), the system tier how long it takes
// (test/system/processes/postgres-unavailable.test.ts).

/** A URL where nothing listens: every connection is refused at once. */
export const UNREACHABLE_URL = 'postgres://postgres@127.0.0.1:1/plants'

/** The URL of a server that accepts connections and never answers, as a stuck one. */
export async function silentServerUrl (t: Teardown): Promise<string> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => { sockets.add(socket.on('close', () => sockets.delete(socket))) })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    return new Promise((resolve) => server.close(resolve))
  })
  return `postgres://postgres@127.0.0.1:${(server.address() as AddressInfo).port}/plants`
}

/** The database at `url` behind a TCP proxy that can cut or freeze every connection: its URL through the proxy. */
export async function behindProxy (t: Teardown, url: string): Promise<{ url: string, proxy: TcpProxy }> {
  const proxied = new URL(url)
  const proxy = await startTcpProxy(t, proxied.hostname, Number(proxied.port || 5432))
  proxied.hostname = '127.0.0.1'
  proxied.port = String(proxy.port)
  return { url: proxied.href, proxy }
}

/** Another session on the database at `url` that holds the row of plant 1 (an insert not committed) until it rolls back. */
export async function heldRow (t: Teardown, url: string): Promise<pg.Client> {
  const blocker = await connect(url)
  t.teardown(() => blocker.end())
  await blocker.query('BEGIN')
  await blocker.query("INSERT INTO plants (id, name) VALUES (1, 'uncommitted')")
  return blocker
}
