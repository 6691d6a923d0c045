import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'

export interface Received { headers: IncomingHttpHeaders, body: string, at: number, url?: string }

/**
 * A real webhook receiver on 127.0.0.1: it keeps every request (raw body) and answers with
 * `answer`, which may hold the response back (a slow or silent receiver).
 */
export async function startReceiver (t: { teardown (fn: () => unknown): void },
  answer: (response: ServerResponse, received: Received, index: number) => void = (response) => response.end()) {
  const received: Received[] = []
  let connections = 0
  let closed = 0
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const entry = { headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now(), url: request.url! }
      received.push(entry)
      answer(response, entry, received.length - 1)
    })
  })
  server.on('connection', (socket) => {
    connections++
    socket.on('close', () => { closed++ })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  const { port } = server.address() as AddressInfo
  // Once every connection is closed, `received` holds all that was sent on them.
  return { url: `http://127.0.0.1:${port}/hook`, port, received, connections: () => connections, closed: () => closed, server }
}
