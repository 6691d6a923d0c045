import { performance } from 'node:perf_hooks'
import t from 'tap'
import { MAX_JSON_DEPTH } from '../../plugins/http/errors.js'
import { AUTH, buildPlugin, JSON_TYPE, storedPlants } from '../helpers/plugin-app.js'

const TOO_DEEP = { error: 400, message: `Body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep` }
// The flood: 1 MiB (the default BODY_LIMIT) of nested arrays.
const HALF_MIB = 512 * 1024 - 1
const DEEP = '['.repeat(HALF_MIB) + ']'.repeat(HALF_MIB)

/** A plant whose extra member nests `depth` levels in all (the plant's own object is the first). */
const plantNested = (id: number, depth: number) =>
  `{"id":${id},"name":"deep","extra":${'['.repeat(depth - 1)}1${']'.repeat(depth - 1)}}`

t.test('a body nested past MAX_JSON_DEPTH is refused with 400 over a real socket, nothing stored', async (t) => {
  const { app, store } = await buildPlugin(t)
  const origin = await app.listen({ host: '127.0.0.1', port: 0 })
  const post = (body: string) => fetch(`${origin}/plants`, { method: 'POST', headers: { ...AUTH, ...JSON_TYPE }, body })

  const started = performance.now()
  const deep = await post(DEEP)
  const elapsed = performance.now() - started
  t.equal(deep.status, 400)
  t.same(await deep.json(), TOO_DEEP)
  t.comment(`1 MiB of nested [ answered in ${elapsed.toFixed(1)} ms`)

  const over = await post(plantNested(2, MAX_JSON_DEPTH + 1))
  t.same([over.status, await over.json()], [400, TOO_DEEP], 'one level past the limit is refused')
  const at = await post(plantNested(1, MAX_JSON_DEPTH))
  t.same([at.status, await at.json()], [200, { name: 'deep' }], 'at the limit it is parsed and stored')
  t.same(await storedPlants(store), [{ id: 1n, name: 'deep' }])
})
