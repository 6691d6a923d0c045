import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import t from 'tap'
import { assertStopsCleanly, exitWithin, NODE_ARGS, SERVER_ENTRY, serverEnv, startServer } from '../../helpers/server-process.js'
import { plantBody } from '../../helpers/load.js'
import { freshDatabase, postgresSkip, roleWithoutCreate, sqlOn } from '../../helpers/postgres.js'
import { SCHEMA_VERSION } from '../../../plugins/store/postgres/schema-version.js'
import { startReceiver } from '../../helpers/receiver.js'
import { TOKEN, webhookEnv } from '../../helpers/webhook-crash.js'
import { eventually, newSecret } from '../../helpers/webhooks.js'

t.test('schema-sql: the printed SQL, run by an administrator, lets a role without CREATE run the service with webhooks',
  { skip: await postgresSkip() }, async (t) => {
    const child = spawn(process.execPath, [...NODE_ARGS, SERVER_ENTRY, 'schema-sql'], { env: serverEnv(), stdio: ['ignore', 'pipe', 'inherit'] })
    let sql = ''
    child.stdout.on('data', (chunk: Buffer) => { sql += chunk.toString() })
    const [code] = await once(child, 'exit') as [number | null]
    t.equal(code, 0, 'schema-sql exits 0')
    t.match(sql, /^CREATE TABLE IF NOT EXISTS "plants" \(id int8 PRIMARY KEY, name text NOT NULL, tag text\);\n/)
    t.match(sql, /^CREATE TABLE IF NOT EXISTS "plants_schema_version" .*;\n/m, 'with the schema version\'s table')
    t.match(sql, /^CREATE TRIGGER plant_store_schema_fence BEFORE INSERT OR UPDATE OR DELETE ON "plants" /m, 'the fence')
    t.match(sql, /\nINSERT INTO "plants_schema_version" AS v \(version\) VALUES \(5\) [^;]*;\n$/, 'and the version recorded last, once the rest is made')
    const operations = readFileSync(new URL('../../../docs/operations.md', import.meta.url), 'utf8')
    t.equal(/which prints:\n\n```sql\n([^`]*)```/.exec(operations)?.[1], sql, 'docs/operations.md shows what it prints')

    const url = await freshDatabase(t)
    await sqlOn(url, sql)
    const asRole = await roleWithoutCreate(t, url)

    const receiver = await startReceiver(t, (response) => { response.statusCode = 204; response.end() })
    const server = await startServer(t, webhookEnv(asRole, receiver.url, newSecret()))
    const created = await fetch(`${server.url}/plants`, {
      method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: plantBody('7', 'fern')
    })
    t.equal(created.status, 200, 'a create succeeds as the role without CREATE')
    t.strictSame(await sqlOn(url, 'SELECT version FROM plants_schema_version'), [{ version: SCHEMA_VERSION }], 'the schema version the SQL recorded')
    t.ok(await eventually(() => receiver.received.some(({ body }) => body.includes('"id":7')), 30_000), 'and its webhook is delivered')
    server.child.kill('SIGTERM')
    assertStopsCleanly(t, server, await exitWithin(server, 15_000))
  })
