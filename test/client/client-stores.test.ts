import Fastify from 'fastify'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import {
  InvalidRequestError, PlantExistsError, PlantNotFoundError, PlantStoreClient, UnauthorizedError, type ListedPlant
} from '../../client/index.js'
import plantStore from '../../src/plugin.js'
import { TOKEN } from '../helpers/app.js'
import { listeningService } from '../helpers/client.js'
import { freshDatabase, postgresSkip } from '../helpers/postgres.js'

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
const PAST_DOUBLES = 2n ** 53n + 1n // a double makes it 2^53, the id beside it

const pgSkip = await postgresSkip()

const STORES: Array<{ name: string, skip?: string | false, url: (t: Test) => Promise<string> }> = [
  { name: 'memory', url: async () => 'memory:' },
  { name: 'SQLite', url: async (t) => `sqlite:${join(t.testdir({}), 'plants.db')}` },
  { name: 'PostgreSQL', skip: pgSkip, url: freshDatabase }
]

/** The ids of listed plants, in their order. */
const ids = (plants: ListedPlant[]) => plants.map(({ id }) => id)

for (const { name, skip, url } of STORES) {
  t.test(`on ${name}: the client creates, reads, lists, iterates and deletes with exact int64 ids`, { skip }, async (t) => {
    const client = new PlantStoreClient({ baseUrl: await listeningService(t, { store: await url(t) }), token: TOKEN })

    const plants: ListedPlant[] = [
      { id: INT64_MIN, name: 'Smallest', tag: 'int64 min' },
      { id: PAST_DOUBLES - 1n, name: 'Neighbour' },
      { id: PAST_DOUBLES, name: 'Agave', tag: 'succulent' },
      { id: INT64_MAX, name: '9223372036854775807', tag: '"id":9223372036854775806' }
    ]
    // Created in another order than the ids': the service sorts them.
    for (const plant of [plants[3], plants[1], plants[0], plants[2]]) {
      const { id, ...stored } = plant
      t.strictSame(await client.create(plant), stored, `create ${id} answers the Plant without its id`)
    }
    for (const { id, ...stored } of plants) t.strictSame(await client.get(id), stored, `get ${id} reads that very plant`)

    t.strictSame(await client.list(), plants, 'one page: every plant, exact ids as bigints, ascending, strings unaltered')
    t.strictSame(ids(await client.list({ limit: 2 })), [INT64_MIN, PAST_DOUBLES - 1n], 'limit')
    t.strictSame(ids(await client.list({ after: PAST_DOUBLES - 1n })), [PAST_DOUBLES, INT64_MAX], 'after an id past 2^53')
    t.strictSame(await client.list({ after: INT64_MAX }), [], 'after the largest id: none')

    const iterated: ListedPlant[] = []
    for await (const plant of client.listAll({ limit: 1 })) iterated.push(plant)
    t.strictSame(iterated, plants, 'the iterator goes through every page, one plant a page')
    const rest: ListedPlant[] = []
    for await (const plant of client.listAll({ after: INT64_MIN, limit: 2 })) rest.push(plant)
    t.strictSame(rest, plants.slice(1), 'from a cursor, two a page')

    const conflict = await client.create({ id: PAST_DOUBLES, name: 'Other' }).catch((error: unknown) => error)
    t.type(conflict, PlantExistsError)
    t.match(conflict, { status: 409, body: { error: 409, message: 'A plant with this id already exists' } }, '409 typed error')
    t.strictSame(await client.get(PAST_DOUBLES), { name: 'Agave', tag: 'succulent' }, 'the stored plant is unchanged')

    for (const { id } of plants) await client.delete(id)
    t.strictSame(await client.list(), [], 'every plant deleted')
    for (const id of [INT64_MIN, PAST_DOUBLES, INT64_MAX]) {
      const missing = await client.get(id).catch((error: unknown) => error)
      t.type(missing, PlantNotFoundError)
      t.match(missing, { status: 404, body: { error: 404, message: 'No plant has this id' } }, `get ${id} after delete: 404`)
      const again = await client.delete(id).catch((error: unknown) => error)
      t.type(again, PlantNotFoundError, `delete ${id} again: 404, thrown (no earlier attempt could have deleted it)`)
    }
    const empty: ListedPlant[] = []
    for await (const plant of client.listAll()) empty.push(plant)
    t.strictSame(empty, [], 'the iterator over an empty store yields nothing')
    t.strictSame(await client.create({ id: INT64_MAX, name: 'again' }), { name: 'again' }, 'a deleted id can be created again')
  })

  t.test(`on ${name}: refusals are typed errors carrying the service's Error body`, { skip }, async (t) => {
    const baseUrl = await listeningService(t, { store: await url(t) })
    const client = new PlantStoreClient({ baseUrl, token: TOKEN })
    const refused = async (call: () => Promise<unknown>) => call().then(() => t.fail('not refused'), (error: unknown) => error)

    // The service's own words for a bad limit, as it answers a plain request: the wording is the
    // validator's (and changes with it), the client only has to carry it.
    const limitAnswer = await fetch(`${baseUrl}/plants?limit=0`, { headers: { authorization: `Bearer ${TOKEN}` } })
    const { message: limitMessage } = await limitAnswer.json() as { message: string }
    t.match(limitMessage, /^querystring\/limit /)

    const limit = await refused(() => client.list({ limit: 0 }))
    t.type(limit, InvalidRequestError, 'list with limit 0')
    t.match(limit, { status: 400, message: limitMessage, body: { error: 400, message: limitMessage } })
    // An id outside int64 never leaves the client: a TypeError, as from plain JavaScript.
    const outside: Array<[string, () => Promise<unknown>]> = [
      ['create an id past int64', () => client.create({ id: INT64_MAX + 1n, name: 'x' })],
      ['create an id below int64', () => client.create({ id: INT64_MIN - 1n, name: 'x' })],
      ['get an id past int64', () => client.get(INT64_MAX + 1n)],
      ['delete an id below int64', () => client.delete(INT64_MIN - 1n)],
      ['list after an id past int64', () => client.list({ after: INT64_MAX + 1n })]
    ]
    for (const [label, call] of outside) t.type(await refused(call), TypeError, label)
    t.strictSame(await client.list(), [], 'nothing was stored')

    const anonymous = new PlantStoreClient({ baseUrl, token: 'not-a-token' })
    const unauthorized = await refused(() => anonymous.list())
    t.type(unauthorized, UnauthorizedError)
    t.match(unauthorized, { status: 401, body: { error: 401, message: 'A valid bearer token is required' } })
  })
}

t.test('a client of a service mounted under a prefix reaches it through its base URL', async (t) => {
  const host = Fastify()
  await host.register(plantStore, { prefix: '/garden', tokens: [TOKEN], store: 'memory:' })
  t.teardown(() => host.close())
  const origin = await host.listen({ host: '127.0.0.1', port: 0 })
  for (const baseUrl of [`${origin}/garden`, `${origin}/garden/`]) {
    const client = new PlantStoreClient({ baseUrl: new URL(baseUrl), token: TOKEN })
    t.strictSame(await client.create({ id: 7n, name: 'Fern' }), { name: 'Fern' }, baseUrl)
    t.strictSame(await client.list(), [{ id: 7n, name: 'Fern' }], baseUrl)
    await client.delete(7n)
  }
})

// Checked by `tsc --noEmit` (npm test), never run: ids are bigint in the client's types, in and out.
export function idsAreBigintInTheTypes (client: PlantStoreClient) {
  return [
    // @ts-expect-error a number is not an id: past 2^53 it would be rounded already
    client.get(2 ** 53 + 1),
    // @ts-expect-error the same for a new plant's id
    client.create({ id: 1, name: 'x' }),
    // @ts-expect-error a string is not an id either
    client.list({ after: '5' }),
    client.list().then((plants): bigint[] => plants.map(({ id }) => id))
  ]
}
