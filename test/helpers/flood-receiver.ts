import { once } from 'node:events'
import { createServer, type AddressInfo, type Socket } from 'node:net'

/**
 * A misbehaving receiver on a raw socket: once the request has arrived it writes `chunk` again and
 * again (`chunk` may depend on the connection), one a millisecond at most and only once the kernel has
 * taken the last one, until the sender hangs up.
 */
export async function startFlood (t: { teardown (fn: () => unknown): void }, chunk: string | ((index: number, connection: number) => string)) {
  const state = { written: 0, closed: 0 }
  const sockets = new Set<Socket>()
  let connections = 0
  const server = createServer((socket) => {
    sockets.add(socket)
    const connection = connections++
    let index = 0
    let open = true
    const pump = () => {
      if (!open) return
      if (socket.writableLength === 0) {
        const text = typeof chunk === 'string' ? chunk : chunk(index++, connection)
        socket.write(text)
        state.written += Buffer.byteLength(text)
      }
      setTimeout(pump, 1)
    }
    socket.once('data', pump)
    socket.on('error', () => {})
    socket.on('close', () => {
      open = false
      state.closed++
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    server.close()
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, state }
}
