/**
 * Made-up names under /documentation/static, against a real server process with a small heap:
 * each request asks for a unique 15,000-character name with Accept-Encoding: gzip. Only the files
 * Swagger UI ships are kept (gzipped) in memory, so the names a client makes up cost nothing once
 * answered, and the process lives.
 */
import t from 'tap'
import { attack, running } from '../../helpers/flood.js'
import { startServer } from '../../helpers/server-process.js'

const TOKEN = 'test-token-static-names-flood'
// The service under the tests' TypeScript loader uses some 60 MB of heap.
const HEAP_MB = 96
const NAME_LENGTH = 15_000
// Half the heap in names: more than it has left, were they kept.
const REQUESTS = Math.ceil(HEAP_MB / 2 * 2 ** 20 / NAME_LENGTH)

/** `total` GETs of unique names, `concurrency` at a time on keep-alive connections; prints the count answered. Plain JavaScript. */
function madeUpNames (port: number, total: number, concurrency: number, nameLength: number) {
  const { Agent, get } = require('node:http') as typeof import('node:http')
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
  let sent = 0
  let answered = 0
  const next = () => {
    if (sent === total) return
    const name = `${String(sent++).padStart(nameLength - 3, 'x')}.js`
    get({ port, host: '127.0.0.1', path: `/documentation/static/${name}`, agent, headers: { 'accept-encoding': 'gzip' } }, (response) => {
      response.resume()
      response.on('end', () => {
        if (++answered % 500 === 0 || answered === total) process.stdout.write(`${answered}\n`)
        next()
      })
    }).on('error', next)
  }
  for (let index = 0; index < concurrency; index++) next()
}

/** The service's heap in use, as its /metrics reports it. */
async function heapUsed (url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  return Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)![1])
}

t.test(`${REQUESTS} made-up ${NAME_LENGTH}-character static names against a ${HEAP_MB} MB heap: nothing is kept, the process lives`, async (t) => {
  const server = await startServer(t, { API_TOKENS: TOKEN, NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}` })
  const before = await heapUsed(server.url)
  const flood = attack(t, madeUpNames, [Number(new URL(server.url).port), REQUESTS, 8, NAME_LENGTH])
  // Until every request is answered, or the process dies.
  await Promise.race([flood.counted(REQUESTS, 120_000), server.exited]).catch((error: Error) => t.fail(error.message))
  t.ok(running(server.child), 'the process is still running')
  const after = await heapUsed(server.url)
  t.comment(`heap used before ${(before / 2 ** 20).toFixed(1)} MB, after ${(after / 2 ** 20).toFixed(1)} MB`)
  t.ok(after - before < HEAP_MB / 4 * 2 ** 20, 'the heap grew by less than a quarter of its limit')
  const bundle = await fetch(`${server.url}/documentation/static/swagger-ui-bundle.js`, { headers: { 'accept-encoding': 'gzip' } })
  await bundle.arrayBuffer()
  t.equal(bundle.status, 200, 'Swagger UI\'s bundle is still served')
})
