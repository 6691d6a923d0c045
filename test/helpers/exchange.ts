import { once } from 'node:events'
import type { Server } from 'node:http'
import { connect, type Socket } from 'node:net'
import { settlesWithin } from './time.js'

/** Writes `first` (then `drip` every 300 ms), and resolves what the server sends before it closes, and when. */
export async function exchange (port: number, first: string, drip?: string) {
  const socket = connect(port, '127.0.0.1')
  let answer = ''
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => { answer += chunk })
  socket.on('error', () => {})
  await once(socket, 'connect')
  const started = Date.now()
  socket.write(first)
  const dripping = drip === undefined ? undefined : setInterval(() => socket.write(drip), 300)
  await once(socket, 'close')
  clearInterval(dripping)
  return { answer, waited: Date.now() - started }
}

/** The head of an HTTP/1.1 request: its request line (`POST /plants`), Host, the given fields, and the blank line. */
export const requestHead = (line: string, ...fields: string[]) => [`${line} HTTP/1.1`, 'Host: x', ...fields, '', ''].join('\r\n')

/** The statuses of the HTTP/1.1 answers in what a connection received, in order. */
export const answers = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map(([, status]) => Number(status))

/** An open connection that keeps what it receives. */
export interface Client { socket: Socket, received: () => string, closed: Promise<void> }

/** A connection that keeps what it receives; `halfOpen` keeps it writable after the server's FIN. */
export async function client (port: number, halfOpen = false): Promise<Client> {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: halfOpen })
  let received = ''
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => { received += chunk })
  socket.on('error', () => {})
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  await once(socket, 'connect')
  return { socket, received: () => received, closed }
}

/**
 * Two turns of the event loop: the server has read what its connections accepted by now had sent,
 * and they no longer count as just accepted (service/edge/connection-table.ts).
 */
export const turns = () => new Promise((resolve) => setImmediate(() => setImmediate(resolve)))

// How long a connection the server closes may take to be seen closed: generous, for a loaded machine.
const CLOSED_WITHIN = 10_000

/** Whether the connection closes soon: the server closed it (a hang would mean it never will). */
export const closesSoon = (connection: Client) => settlesWithin(connection.closed, CLOSED_WITHIN)

/** Resolves with what the connection received, once `enough` holds of it or the connection closed. */
export function receivedWhen (connection: Client, enough: (text: string) => boolean): Promise<string> {
  const { socket, received } = connection
  return new Promise((resolve) => {
    const check = () => {
      if (!enough(received()) && !socket.destroyed) return
      socket.off('data', check).off('close', check)
      resolve(received())
    }
    // After the connection's own listener: what it received includes the chunk that just came.
    socket.on('data', check).on('close', check)
    check()
  })
}

/** The server's side of each connection it accepts from now on, in the order accepted. */
export function acceptedBy (server: Server): Socket[] {
  const sockets: Socket[] = []
  server.on('connection', (socket: Socket) => sockets.push(socket))
  return sockets
}
