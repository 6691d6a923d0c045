import { test } from 'node:test'
import { storeContract } from 'plant-store/store-contract'
import { MapStore } from '../src/map-store.js'

// The contract the memory, SQLite and PostgreSQL stores pass, run on the host's own store.
storeContract({
  test,
  open: async () => new MapStore(),
  openWithOutage: async () => {
    const store = new MapStore()
    return { store, down: () => { store.reachable = false }, up: () => { store.reachable = true } }
  }
})
