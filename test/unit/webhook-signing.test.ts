import { randomBytes } from 'node:crypto'
import t from 'tap'
import { Webhook as StandardWebhook } from 'standardwebhooks'
import { Webhook as SvixWebhook } from 'svix'
import { secretKey } from '../../plugins/webhooks/settings.js'
import { messageId, webhookHeaders } from '../../plugins/webhooks/delivery/signing.js'

const secret = () => `whsec_${randomBytes(32).toString('base64')}`
// A body whose id no float can hold: it must verify and stay exact as raw text.
const BODY = '{"type":"plant.created","timestamp":"2026-11-24T00:00:00.000Z","id":9007199254740993,"name":"Fern","tag":"green"}'

function verifiers (secretText: string) {
  const standard = new StandardWebhook(secretText)
  const svix = new SvixWebhook(secretText)
  return {
    standard: (body: string, headers: Record<string, string>) => standard.verify(body, headers, { jsonParse: false }),
    svix: (body: string, headers: Record<string, string>) => svix.verify(body, headers)
  }
}

t.test('a signed request verifies with standardwebhooks and svix, the body exact', async (t) => {
  const text = secret()
  const id = messageId()
  t.match(id, /^msg_[A-Za-z0-9_-]+$/)
  t.notMatch(id, /\./)
  const before = Math.floor(Date.now() / 1000)
  const headers = webhookHeaders([secretKey(text, 'test')], id, BODY)
  const after = Math.floor(Date.now() / 1000)
  t.equal(headers['content-type'], 'application/json')
  t.equal(headers['webhook-id'], id)
  const stamp = Number(headers['webhook-timestamp'])
  t.ok(Number.isInteger(stamp) && stamp >= before && stamp <= after, 'the timestamp is now, in whole seconds')
  const { standard, svix } = verifiers(text)
  t.equal(standard(BODY, headers), undefined, 'standardwebhooks verifies, leaving the raw body unparsed (its JSON.parse would round the id)')
  t.same(svix(BODY, headers), JSON.parse(BODY), 'svix verifies')
})

t.test('a flipped byte, another secret or an old timestamp fails', async (t) => {
  const text = secret()
  const headers = webhookHeaders([secretKey(text, 'test')], messageId(), BODY)
  const flipped = BODY.replace('9007199254740993', '9007199254740992')
  for (const [name, verify] of Object.entries(verifiers(text))) {
    t.throws(() => verify(flipped, headers), `${name}: a changed body fails`)
    t.throws(() => verify(BODY, { ...headers, 'webhook-id': messageId() }), `${name}: another id fails`)
  }
  for (const [name, verify] of Object.entries(verifiers(secret()))) {
    t.throws(() => verify(BODY, headers), `${name}: another secret fails`)
  }
  const old = webhookHeaders([secretKey(text, 'test')], messageId(), BODY, Date.now() - 10 * 60_000)
  for (const [name, verify] of Object.entries(verifiers(text))) {
    t.throws(() => verify(BODY, old), `${name}: a timestamp 10 minutes old fails`)
  }
})

t.test('a rotation gives one signature per secret, each verifying alone', async (t) => {
  const [before, after] = [secret(), secret()]
  const headers = webhookHeaders([secretKey(before, 'a'), secretKey(after, 'b')], messageId(), BODY)
  const signatures = headers['webhook-signature'].split(' ')
  t.equal(signatures.length, 2)
  for (const signature of signatures) t.match(signature, /^v1,[A-Za-z0-9+/]+=*$/)
  for (const text of [before, after]) {
    for (const [name, verify] of Object.entries(verifiers(text))) t.doesNotThrow(() => verify(BODY, headers), `${name} with either secret`)
  }
})

t.test('each attempt signs its own timestamp; the id stays', async (t) => {
  const text = secret()
  const id = messageId()
  const first = webhookHeaders([secretKey(text, 'test')], id, BODY, Date.now() - 5000)
  const second = webhookHeaders([secretKey(text, 'test')], id, BODY)
  t.equal(first['webhook-id'], second['webhook-id'])
  t.ok(Number(second['webhook-timestamp']) > Number(first['webhook-timestamp']))
  t.not(first['webhook-signature'], second['webhook-signature'])
  for (const verify of Object.values(verifiers(text))) {
    t.doesNotThrow(() => verify(BODY, second))
    t.throws(() => verify(BODY, { ...second, 'webhook-timestamp': first['webhook-timestamp'] }), 'a signature binds its timestamp')
  }
})

t.test('message ids: each of 1,000 (several refills of the random pool) different, 128 bits in hex', async (t) => {
  const ids = Array.from({ length: 1000 }, () => messageId())
  t.equal(new Set(ids).size, ids.length, 'all different')
  t.ok(ids.every((id) => /^msg_[0-9a-f]{32}$/.test(id)), 'msg_ and 32 hex digits')
})
