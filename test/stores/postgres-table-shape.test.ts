/**
 * 409 means "the id was taken before this request", whatever the table has become,
 * and the plugin never takes over a table that is not its own. The class: the table
 * is there, but not the shape the store needs (columns, types, primary key, constraints,
 * privileges). Checked at start (refused, naming plant-store and the option) and whenever an
 * operation fails for a reason that is not the id: then 503 with /readyz 503 and one log line
 * saying what is wrong, never a 500 nor a false 409; service again once the table is fixed.
 */
import t from 'tap'
import { buildApp } from '../../service/app.js'
import { AUTH, JSON_TYPE, TOKEN, type App } from '../helpers/app.js'
import { assertRefusedOnceBroken, ownedByAnotherRole, getPlant, readiness, servedWithTableLog } from '../helpers/postgres-table.js'
import { freshDatabase, postgresSkip, sqlOn } from '../helpers/postgres.js'
import { shapeProblems, type TableShape } from '../../plugins/store/postgres/table.js'

const pgSkip = await postgresSkip()

const post = (app: App, id: number | string) => app.inject({
  method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: `{"id":${id},"name":"plant ${id}"}`
})

interface Member {
  label: string
  /** What breaks the table, as the table's owner. */
  breakIt: string
  /** What the log line says. */
  says: RegExp
  fixIt: string
}

const MEMBERS: Member[] = [
  { label: 'id retyped to numeric(20)', breakIt: 'ALTER TABLE plants ALTER COLUMN id TYPE numeric(20)', says: /column id is numeric\(20,0\), not bigint/, fixIt: 'ALTER TABLE plants ALTER COLUMN id TYPE int8' },
  { label: 'a column renamed', breakIt: 'ALTER TABLE plants RENAME COLUMN name TO title', says: /it has no column name; it has other columns \(title\)/, fixIt: 'ALTER TABLE plants RENAME COLUMN title TO name' },
  { label: 'the primary key dropped', breakIt: 'ALTER TABLE plants DROP CONSTRAINT plants_pkey', says: /it has no primary key/, fixIt: 'ALTER TABLE plants ADD PRIMARY KEY (id)' },
  { label: 'INSERT revoked', breakIt: 'REVOKE INSERT ON plants FROM {role}', says: /the database user may not INSERT on it/, fixIt: 'GRANT INSERT ON plants TO {role}' },
  { label: 'a CHECK constraint added', breakIt: 'ALTER TABLE plants ADD CONSTRAINT short_names CHECK (length(name) < 3) NOT VALID', says: /it has constraints of its own \(short_names\)/, fixIt: 'ALTER TABLE plants DROP CONSTRAINT short_names' }
]

for (const member of MEMBERS) {
  t.test(`${member.label} under the running service: 503 and /readyz 503, one log line, no 500 nor false 409; service once fixed`, { skip: pgSkip }, async (t) => {
    const { admin, role, url } = await ownedByAnotherRole(t)
    const { app, tableLines } = await servedWithTableLog(t, url)
    t.equal((await post(app, 1)).statusCode, 200, 'a create before')
    t.equal((await readiness(app)).statusCode, 200, '/readyz 200 before')

    await sqlOn(admin, member.breakIt.replace('{role}', role))
    await assertRefusedOnceBroken(t, app, admin, post)
    t.equal((await getPlant(app, 1)).statusCode, 503, 'a read answers 503')
    const logged = tableLines()
    t.equal(logged.length, 1, 'one log line says what is wrong with the table', { found: logged })
    t.match(logged[0], member.says)

    await sqlOn(admin, member.fixIt.replace('{role}', role))
    t.equal((await readiness(app)).statusCode, 200, 'fixed: /readyz 200')
    t.equal((await post(app, 101)).statusCode, 200, 'a create 200')
    t.equal((await post(app, 101)).statusCode, 409, 'and 409 again for a taken id')
    t.equal(tableLines().length, 2, 'one more line: usable again')
  })
}

t.test('a host\'s own plants table: registration refused naming plant-store and the option; the table untouched', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  await sqlOn(url, 'CREATE TABLE plants (sku text PRIMARY KEY, price numeric)')
  await sqlOn(url, "INSERT INTO plants VALUES ('fern-1', 9.5)")
  await t.rejects(buildApp({ tokens: [TOKEN], store: url }), {
    message: /^PostgreSQL: plant-store: the PostgreSQL table public\.plants is not one plant-store can use: it has no column id; it has no column name; it has no column tag; it has other columns \(sku, price\); its primary key is \(sku\), not \(id\)\. .*postgres\.schema or postgres\.table option/
  })
  const { app } = await servedWithTableLog(t, url, { postgres: { table: 'garden_plants' } })
  t.equal((await post(app, 1)).statusCode, 200, 'with postgres.table, the plugin has a table of its own')
  t.strictSame(await sqlOn(url, 'SELECT sku, price::text FROM plants'), [{ sku: 'fern-1', price: '9.5' }], 'the host\'s table is untouched')
  t.strictSame(await sqlOn(url, 'SELECT id::text, name FROM garden_plants'), [{ id: '1', name: 'plant 1' }])
})

t.test('postgres.schema: the table goes in a schema of its own; nothing is written in public', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const { app } = await servedWithTableLog(t, url, { postgres: { schema: 'plant_store' } })
  t.equal((await post(app, 1)).statusCode, 200)
  t.equal((await getPlant(app, 1)).statusCode, 200)
  t.strictSame(await sqlOn(url, "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema IN ('public', 'plant_store') ORDER BY 1, 2"),
    ['plants', 'plants_schema_version', ...['attempts', 'deliveries', 'endpoints', 'events', 'feed'].map((table) => `plants_webhook_${table}`)]
      .sort().map((table) => ({ table_schema: 'plant_store', table_name: table })),
    'the table, its schema version and the events the change feed reads, in plant_store')
})

t.test('ids read back as numeric by a listing: 503, not ids of another type, nor a 500', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const { app, tableLines } = await servedWithTableLog(t, url)
  t.equal((await post(app, 1)).statusCode, 200)
  await sqlOn(url, 'ALTER TABLE plants ALTER COLUMN id TYPE numeric(20)')
  t.equal((await app.inject({ url: '/plants', headers: AUTH })).statusCode, 503, 'the listing answers 503')
  t.equal(tableLines().length, 1, 'one log line')
})

t.test('every shape the store cannot use is named (the catalog\'s answer, checked without a database)', async (t) => {
  const good: TableShape = {
    schema: 'public',
    kind: 'r',
    can_select: true,
    can_insert: true,
    can_delete: true,
    columns: [{ name: 'id', type: 'bigint', notNull: true }, { name: 'name', type: 'text', notNull: true }, { name: 'tag', type: 'text', notNull: false }],
    primary_key: ['id'],
    constraints: [],
    unique_indexes: [],
    triggers: [],
    rules: [],
    row_security: false,
    policies: []
  }
  t.strictSame(shapeProblems(good), [], 'the store\'s own table')
  t.strictSame(shapeProblems({ ...good, kind: 'p' }), [], 'partitioned, it is still a table')
  t.strictSame(shapeProblems({ ...good, kind: 'v' }), ['it is not a table (a view or another kind of relation)'])
  t.strictSame(shapeProblems({ ...good, columns: good.columns.map((column) => ({ ...column, notNull: true })) }),
    ['column tag is NOT NULL, and a plant may have no tag'])
  t.strictSame(shapeProblems({ ...good, primary_key: ['id', 'name'], can_select: false, can_delete: false }),
    ['its primary key is (id, name), not (id)', 'the database user may not SELECT, DELETE on it'])
})
