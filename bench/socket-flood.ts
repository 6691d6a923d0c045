// The socket flood of bench/slowloris.ts and of the flood tests (test/system/slow-headers-flood.test.ts,
// test/system/tokenless-share-flood.test.ts): one attacker, run as a process of its own from its text.

/** What each flood socket does once connected. */
export type FloodSocket =
  /** Slowloris: a request line, then one header line every `drip` ms, never the end of the headers. */
  | { drip: number }
  /** A well-behaved client without a token: GET `path` again the moment each answer arrives. */
  | { path: string }

/**
 * `count` sockets to 127.0.0.1:`port`, each doing `each` and reconnecting `reconnectPause` ms after
 * it closes. Prints a running count, one a line: of the connections made (slowloris) or of the
 * answers read (one answer is one small packet). Plain JavaScript, no closure, no import: it runs
 * through its source text (`node -e`), as an attacker is another machine.
 */
/* c8 ignore start: it runs in the attacker's process, never in the test's */
export function socketFlood (port: number, count: number, reconnectPause: number, each: FloodSocket) {
  const { connect } = require('node:net') as typeof import('node:net')
  let counted = 0
  const tally = () => process.stdout.write(`${++counted}\n`)
  const open = () => {
    const socket = connect(port, '127.0.0.1')
    socket.on('error', () => {})
    let drip: ReturnType<typeof setInterval> | undefined
    if ('drip' in each) {
      socket.resume()
      socket.once('connect', () => {
        socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n')
        tally()
      })
      drip = setInterval(() => socket.write('X-Drip: 1\r\n'), each.drip)
    } else {
      const ask = () => socket.write(`GET ${each.path} HTTP/1.1\r\nHost: x\r\n\r\n`)
      socket.once('connect', ask)
      socket.on('data', () => {
        tally()
        ask()
      })
    }
    socket.once('close', () => {
      clearInterval(drip)
      setTimeout(open, reconnectPause)
    })
  }
  for (let index = 0; index < count; index++) open()
}
/* c8 ignore stop */
