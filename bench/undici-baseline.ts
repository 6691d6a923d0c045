// The floor of a webhook delivery, for `npm run bench:webhooks`: a bare script that signs and POSTs
// `count` plant events (the service's own payload and signing) to the receiver, `inFlight` at a
// time, with undici's Pool.request (the floor) or node:http with a keep-alive Agent (the client
// the service used before undici); prints its CPU per delivery in µs.
// node dist/bench/undici-baseline.js <url> <secret> [count] [inFlight] [undici|http]
import { Agent, request as httpRequest } from 'node:http'
import { Pool } from 'undici'
import { messageId, plantCreatedPayload, webhookHeaders } from '../src/service-api.js'

const [url, secret, count = '20000', inFlight = '64', client = 'undici'] = process.argv.slice(2)
const target = new URL(url)
const keys = [Buffer.from(secret.slice('whsec_'.length), 'base64')]
const bodies = Array.from({ length: Number(count) }, (_, id) => ({ id: messageId(), body: plantCreatedPayload({ id: BigInt(id + 1), name: 'bench' }, new Date()) }))

const pool = new Pool(target.origin, { connections: Number(inFlight), pipelining: 1 })
const undiciPost = async (headers: Record<string, string>, body: string) => {
  const { statusCode, body: answer } = await pool.request({ method: 'POST', path: target.pathname, headers, body })
  await answer.dump()
  return statusCode
}

const agent = new Agent({ keepAlive: true, maxSockets: Number(inFlight) })
const httpPost = (headers: Record<string, string>, body: string) => new Promise<number>((resolve, reject) => {
  const sent = httpRequest(target, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (answer) => {
    answer.resume()
    answer.once('end', () => resolve(answer.statusCode!))
  })
  sent.once('error', reject)
  sent.end(body)
})

const post = client === 'http' ? httpPost : undiciPost
let next = 0
const start = process.cpuUsage()
await Promise.all(Array.from({ length: Number(inFlight) }, async () => {
  while (next < bodies.length) {
    const { id, body } = bodies[next++]
    const status = await post(webhookHeaders(keys, id, body), body)
    if (status >= 300) throw new Error(`the receiver answered ${status}`)
  }
}))
const used = process.cpuUsage(start)
await pool.close()
agent.destroy()
process.stdout.write(`${((used.user + used.system) / bodies.length).toFixed(1)}\n`)
