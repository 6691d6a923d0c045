// The floor of a webhook delivery, for `npm run bench:webhooks`: a bare script that signs and POSTs
// `count` plant events (the service's own payload and signing) to the receiver with undici's
// Pool.request, `inFlight` at a time; prints its CPU per delivery in µs.
// node dist/bench/undici-baseline.js <url> <secret> [count] [inFlight]
import { Pool } from 'undici'
import { plantCreatedPayload } from '../webhooks/payload.js'
import { messageId, webhookHeaders } from '../webhooks/signing.js'

const [url, secret, count = '20000', inFlight = '64'] = process.argv.slice(2)
const target = new URL(url)
const keys = [Buffer.from(secret.slice('whsec_'.length), 'base64')]
const pool = new Pool(target.origin, { connections: Number(inFlight), pipelining: 1 })
const bodies = Array.from({ length: Number(count) }, (_, id) => ({ id: messageId(), body: plantCreatedPayload({ id: BigInt(id + 1), name: 'bench' }, new Date()) }))

let next = 0
const start = process.cpuUsage()
await Promise.all(Array.from({ length: Number(inFlight) }, async () => {
  while (next < bodies.length) {
    const { id, body } = bodies[next++]
    const { statusCode, body: answer } = await pool.request({ method: 'POST', path: target.pathname, headers: webhookHeaders(keys, id, body), body })
    await answer.dump()
    if (statusCode >= 300) throw new Error(`the receiver answered ${statusCode}`)
  }
}))
const used = process.cpuUsage(start)
await pool.close()
process.stdout.write(`${((used.user + used.system) / bodies.length).toFixed(1)}\n`)
