import { performance } from 'node:perf_hooks'
import t from 'tap'
import { MAX_JSON_DEPTH } from '../../plugins/http/errors.js'
import { nestsDeeperThan, parseJsonBody } from '../../plugins/http/json-body.js'
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

t.test('the depth check costs little however deep the body', async (t) => {
  const body = Buffer.from(DEEP)
  // The fastest of a few tries: the machine is shared, a try may wait for the CPU.
  let elapsed = Infinity
  for (let run = 0; run < 5; run++) {
    const started = performance.now()
    t.throws(() => parseJsonBody(body), { statusCode: 400, message: TOO_DEEP.message })
    elapsed = Math.min(elapsed, performance.now() - started)
  }
  t.comment(`parseJsonBody of 1 MiB of nested [: ${elapsed.toFixed(1)} ms`)
  // Without the check: ~830 ms here (JSON.parse, then the shape scan), ~350 ms on an idle machine.
  t.ok(elapsed < 50, `refused in ${elapsed.toFixed(1)} ms, before any parsing`)
})

t.test('brackets inside strings do not count, escaped quotes included', async (t) => {
  const inString = JSON.stringify({ id: 1, name: '['.repeat(1000) + '\\"[' + '\\\\' })
  t.notOk(nestsDeeperThan(inString, 1))
  t.same(parseJsonBody(Buffer.from(inString)), JSON.parse(inString))
  t.ok(nestsDeeperThan('{"a":[[', 2), 'text that is not JSON is measured as well')
  t.notOk(nestsDeeperThan('["unterminated [[[', 1), 'an unterminated string ends the text')
})
