import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { test } from 'node:test'
import Fastify from 'fastify'
import plantStore from 'plant-store'
import { TOKEN } from './helpers.js'

const require = createRequire(import.meta.url)
const installed = (name: string) => {
  try {
    require.resolve(`${name}/package.json`)
    return true
  } catch {
    return false
  }
}

test('a host pays only for what it uses: the standalone server\'s packages are not installed', () => {
  for (const name of ['prom-client', 'helmet', 'close-with-grace', 'env-schema', 'pino-pretty', 'esbuild']) {
    assert.equal(installed(name), false, `${name} is not installed`)
  }
})

test('a store driver that is not installed is a clear error naming the package to install', { skip: installed('better-sqlite3') && 'better-sqlite3 is installed in this host' }, async () => {
  const host = Fastify()
  await assert.rejects(async () => {
    await host.register(plantStore, { tokens: [TOKEN], store: 'sqlite:./plants.db' })
    await host.ready()
  }, /better-sqlite3 is not installed: npm install better-sqlite3/)
  await host.close()
})

test('with better-sqlite3 installed, the SQLite store works', { skip: !installed('better-sqlite3') && 'better-sqlite3 is not installed in this host' }, async (t) => {
  const { mkdtempSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const file = join(mkdtempSync(join(tmpdir(), 'host-')), 'plants.db')
  const host = Fastify()
  t.after(() => host.close())
  await host.register(plantStore, { tokens: [TOKEN], store: `sqlite:${file}` })
  const created = await host.inject({
    method: 'POST', url: '/plants', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, payload: '{"id":9007199254740993,"name":"Ivy"}'
  })
  assert.equal(created.statusCode, 200)
  assert.equal((await host.inject({ url: '/plants', headers: { authorization: `Bearer ${TOKEN}` } })).body, '[{"id":9007199254740993,"name":"Ivy"}]')
})
