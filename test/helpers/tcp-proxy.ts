import { once } from 'node:events'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import type { Teardown } from './server-process.js'

export interface TcpProxy {
  /** The local port the proxy listens on (127.0.0.1). */
  port: number
  /** A sudden outage: every open connection is destroyed at once, new ones until `up()`. */
  down (): void
  /** Forwards new connections to the target again. */
  up (): void
  /** A server that stops answering (as under SIGSTOP): connections stay open, nothing goes through. */
  freeze (): void
  /** Everything held back goes through again. */
  thaw (): void
}

/**
 * A TCP proxy on a free local port that forwards each connection to `targetHost:targetPort` while
 * up; it starts up. It and every connection through it are closed at the test's teardown.
 */
export async function startTcpProxy (t: Teardown, targetHost: string, targetPort: number): Promise<TcpProxy> {
  let isUp = true
  let frozen = false
  // Both ends of every forwarded connection, to cut them all at once.
  const sockets = new Set<Socket>()
  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
    // A reset is what an outage looks like: the other side is destroyed with it, nothing to report.
    socket.on('error', () => {})
    return socket
  }

  const server = createServer((client) => {
    if (!isUp) {
      client.on('error', () => {})
      client.destroy()
      return
    }
    track(client)
    const target = track(connect(targetPort, targetHost))
    client.pipe(target).pipe(client)
    if (frozen) for (const socket of [client, target]) socket.pause()
    client.once('close', () => target.destroy())
    target.once('close', () => client.destroy())
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')

  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })

  return {
    port: (server.address() as AddressInfo).port,
    down () {
      isUp = false
      for (const socket of sockets) socket.destroy()
    },
    up () {
      isUp = true
    },
    freeze () {
      frozen = true
      for (const socket of sockets) socket.pause()
    },
    thaw () {
      frozen = false
      for (const socket of sockets) socket.resume()
    }
  }
}
