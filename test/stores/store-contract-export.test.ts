import t from 'tap'
import { storeContract } from '../../plugins/store/contract.js'
import { StoreUnavailableError } from '../../plugins/http/errors.js'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import type { PlantStore } from '../../plugins/store/types.js'

/** Runs the contract on stores from `open`; resolves the names of the tests that failed. */
async function failuresOf (open: () => Promise<PlantStore>, withOutage = false): Promise<string[]> {
  const runs: Array<Promise<string | undefined>> = []
  storeContract({
    test: (name, run) => runs.push(run().then(() => undefined, () => name)),
    open,
    openWithOutage: withOutage
      ? async () => ({ store: await open(), down () {}, up () {} })
      : undefined
  })
  return (await Promise.all(runs)).filter((name) => name !== undefined)
}

t.test('a store that keeps the contract passes every test of it', async (t) => {
  t.strictSame(await failuresOf(async () => createMemoryStore()), [])
})

t.test('a store that breaks the contract fails the tests of what it breaks', async (t) => {
  // Duplicates throw a plain Error (a 500 through the routes), and pages come in insertion order.
  const sloppy = async (): Promise<PlantStore> => {
    const store = createMemoryStore()
    const created: bigint[] = []
    return {
      ...store,
      async create (plant) {
        if (await store.get(plant.id)) throw new Error('duplicate key')
        created.push(plant.id)
        return store.create(plant)
      },
      async list ({ after, limit }) {
        const all = await store.list({ limit: 1000 })
        return created.filter((id) => after === undefined || id > after).slice(0, limit)
          .map((id) => all.find((plant) => plant.id === id)!)
      }
    }
  }
  const failed = await failuresOf(sloppy, true)
  t.ok(failed.includes('a duplicate create rejects with PlantExistsError (409) and keeps the first plant'))
  t.ok(failed.includes('list orders ids numerically, respects limit and uses after as an exclusive cursor'))
  t.ok(failed.some((name) => name.startsWith('while unavailable')), 'a store that never says it is unavailable')
  t.notOk(failed.includes('ping resolves'))
})

t.test('a store whose reads fail another way while it is down, or whose ping says ready then, fails the outage test', async (t) => {
  const withOutage = (broken: (store: PlantStore, isDown: () => boolean) => PlantStore) => async () => {
    let down = false
    const store = broken(createMemoryStore(), () => down)
    const unavailable = () => { if (down) throw new StoreUnavailableError() }
    const create = store.create.bind(store)
    store.create = async (plant) => { unavailable(); return create(plant) }
    return { store, down: () => { down = true }, up: () => { down = false } }
  }
  const outageFailures = async (openWithOutage: () => Promise<{ store: PlantStore, down (): void, up (): void }>) => {
    const runs: Array<Promise<string | undefined>> = []
    storeContract({ test: (name, run) => runs.push(run().then(() => undefined, (error: Error) => `${name}: ${error.message}`)), open: async () => createMemoryStore(), openWithOutage })
    return (await Promise.all(runs)).filter((name) => name !== undefined)
  }
  const plainErrors = await outageFailures(withOutage((store, isDown) => ({
    ...store, get: async (id) => { if (isDown()) throw new Error('socket hang up'); return store.get(id) }
  })))
  t.match(plainErrors, [/^while unavailable.*get answers or rejects StoreUnavailableError/])
  const readyWhileReadsFail = await outageFailures(withOutage((store, isDown) => ({
    ...store, list: async (options) => { if (isDown()) throw new StoreUnavailableError(); return store.list(options) }
  })))
  t.match(readyWhileReadsFail, [/^while unavailable.*ping rejects while reads do/])
})

t.test('a store without update and listTagged (a host\'s, of the six methods) passes: those cases are skipped', async (t) => {
  const host = async (): Promise<PlantStore> => {
    const { update, listTagged, ...required } = createMemoryStore()
    t.ok(update !== undefined && listTagged !== undefined)
    return required
  }
  t.strictSame(await failuresOf(host), [])
})
