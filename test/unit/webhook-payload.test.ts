import t from 'tap'
import { PlantCreatedEventSchema, PlantDeletedEventSchema } from '../../schemas/webhook-events.js'
import { plantCreatedHead, plantCreatedPayload, plantCreatedTail, plantDeletedPayload } from '../../plugins/webhooks/delivery/payload.js'

const AT = new Date('2026-11-24T00:20:00.123Z')

t.test('ids are exact int64 JSON integers at both ends of the range and past 2^53', async (t) => {
  for (const id of [-(2n ** 63n), 2n ** 53n + 1n, 2n ** 63n - 1n, 0n]) {
    const text = plantCreatedPayload({ id, name: 'Fern', tag: 'green' }, AT)
    t.equal(text, `{"type":"plant.created","timestamp":"2026-11-24T00:20:00.123Z","id":${id},"name":"Fern","tag":"green"}`)
    t.equal(/"id":(-?\d+)/.exec(text)![1], String(id), `${id} written digit for digit`)
    t.equal(plantDeletedPayload(id, AT), `{"type":"plant.deleted","timestamp":"2026-11-24T00:20:00.123Z","id":${id}}`)
  }
})

t.test('name and tag are JSON strings whatever they hold; no tag, no key', async (t) => {
  const name = 'Quote " backslash \\ line\n \u2028 \u{1f331}'
  const text = plantCreatedPayload({ id: 7n, name }, AT)
  t.same(JSON.parse(text), { type: 'plant.created', timestamp: AT.toISOString(), id: 7, name })
  t.notMatch(text, /"tag"/)
})

t.test('the keys come in the order the event schemas (and so the OpenAPI document) give them', async (t) => {
  const created = JSON.parse(plantCreatedPayload({ id: 1n, name: 'Fern', tag: 'green' }, AT)) as object
  t.strictSame(Object.keys(created), Object.keys(PlantCreatedEventSchema.properties), 'plant.created')
  const deleted = JSON.parse(plantDeletedPayload(1n, AT)) as object
  t.strictSame(Object.keys(deleted), Object.keys(PlantDeletedEventSchema.properties), 'plant.deleted')
})

t.test('a plant.created text is its commit\'s head and the plant\'s tail', async (t) => {
  const plant = { id: -12n, name: 'a"b', tag: 't' }
  t.equal(plantCreatedHead(AT), '{"type":"plant.created","timestamp":"2026-11-24T00:20:00.123Z","id":')
  t.equal(plantCreatedTail(plant), '-12,"name":"a\\"b","tag":"t"}')
  t.equal(plantCreatedPayload(plant, AT), plantCreatedHead(AT) + plantCreatedTail(plant))
})
