// A webhook receiver for `npm run bench:webhooks`, in a process of its own so that its CPU is
// not the service's. `node receiver.js <port> [fast|continue|silent]`:
// - fast (the default): answers 204 at once;
// - continue: answers every request with an endless stream of `100 Continue` interim responses;
// - silent: reads every request and never answers.
// It prints how many deliveries it received (requests, in the hostile modes), every 20 ms.
import { createServer } from 'node:http'
import { createServer as createTcpServer, type Socket } from 'node:net'

const [port, mode = 'fast'] = [Number(process.argv[2]), process.argv[3]]
let received = 0

// 100 interim responses (2.5 KiB) a millisecond, for as long as the connection lasts: endless for
// the sender, yet not so fast that this process takes the core it shares with the load generator.
const CONTINUE = Buffer.from('HTTP/1.1 100 Continue\r\n\r\n'.repeat(100))

function flood (socket: Socket): void {
  socket.write(CONTINUE)
  const timer = setInterval(() => socket.write(CONTINUE), 1)
  socket.once('close', () => clearInterval(timer))
}

if (mode === 'fast') {
  createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      received++
      response.statusCode = 204
      response.end()
    })
  }).listen(port, '127.0.0.1')
} else {
  createTcpServer((socket) => {
    socket.on('error', () => {})
    let started = false
    socket.on('data', (chunk) => {
      // Requests counted by their request lines (a body never starts with one).
      received += chunk.toString('latin1').match(/^POST /gm)?.length ?? 0
      if (mode === 'continue' && !started) {
        started = true
        flood(socket)
      }
    })
  }).listen(port, '127.0.0.1')
}
setInterval(() => process.stdout.write(`${received}\n`), 20)
