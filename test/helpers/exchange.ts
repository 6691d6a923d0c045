import { once } from 'node:events'
import { connect } from 'node:net'

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
