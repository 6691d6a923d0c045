import { execFile } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { format, promisify } from 'node:util'
import t, { type Test } from 'tap'
import ts from 'typescript'
import { TOKEN } from '../helpers/app.js'
import { listeningService } from '../helpers/client.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** The TypeScript blocks of a section of the client's page, from its heading to the next heading. */
async function pageBlocks (heading: string) {
  const page = await readFile(resolve(ROOT, 'docs/client.md'), 'utf8')
  const start = page.indexOf(`\n${heading}\n`) + heading.length + 2
  const section = page.slice(start, page.indexOf('\n#', start))
  return [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map(([, code]) => code)
}

/** Writes an example into `dir`, importing the client from its source rather than the package's name. */
async function writeExample (dir: string, name: string, code: string) {
  const file = join(dir, name)
  await writeFile(file, code.replace("from 'plant-store/client'", `from '${relative(dir, resolve(ROOT, 'client/index.js'))}'`))
  return file
}

// Each file parsed once while its text stays the same (the standard library's and Node's types,
// the client's sources): the checks parse again only what changed, as an editor's do.
const parsed = new Map<string, ts.SourceFile>()

/** The type errors in these files, checked with the project's compiler options. */
function typeErrors (t: Test, files: string[]) {
  const config = ts.getParsedCommandLineOfConfigFile(resolve(ROOT, 'tsconfig.json'), {}, {
    ...ts.sys, onUnRecoverableConfigFileDiagnostic: (diagnostic) => t.fail(String(diagnostic.messageText))
  })!
  const options = { ...config.options, noEmit: true }
  const host = ts.createCompilerHost(options)
  const parse = host.getSourceFile
  host.getSourceFile = (fileName, ...rest) => {
    const text = host.readFile(fileName)
    const known = parsed.get(fileName)
    if (known !== undefined && known.text === text) return known
    const file = parse(fileName, ...rest)
    if (file !== undefined) parsed.set(fileName, file)
    return file
  }
  const program = ts.createProgram(files, options, host)
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
}

/** Runs an example against the real service, with the environment the page's examples read: what it printed. */
async function run (t: Test, file: string) {
  process.env.PLANT_STORE_URL = await listeningService(t)
  process.env.PLANT_STORE_TOKEN = TOKEN
  const printed: string[] = []
  const log = console.log
  console.log = (...values: unknown[]) => printed.push(format(...values))
  try {
    await import(pathToFileURL(file).href)
  } finally {
    console.log = log
    delete process.env.PLANT_STORE_URL
    delete process.env.PLANT_STORE_TOKEN
  }
  return printed
}

/** What an example's comments say its console.log lines print. */
const promised = (example: string) => example.split('\n').filter((line) => line.includes('console.log('))
  .map((line) => line.slice(line.lastIndexOf(' // ') + 4))

t.test("docs/client.md's client example type-checks and runs as written, printing what its comments say", async (t) => {
  const [example] = await pageBlocks('## Using it')
  const file = await writeExample(t.testdir({}), 'example.ts', example)
  t.strictSame(typeErrors(t, [file]), [], 'it type-checks')
  t.ok(promised(example).length >= 5, `${promised(example).length} printed lines promised`)
  t.strictSame(await run(t, file), promised(example))
})

t.test("docs/client.md's generated-client example: bigint types from openapi-typescript, used by openapi-fetch as written", async (t) => {
  const blocks = await pageBlocks('## Exact ids with a generated client')
  t.equal(blocks.length, 2, 'a script that writes the types, and their use')
  const [generator, example] = blocks
  const dir = t.testdir({})
  const generatorFile = await writeExample(dir, 'generate-types.ts', generator)
  const exampleFile = await writeExample(dir, 'example.ts', example)

  // The script reads the document the service serves.
  t.strictSame(await run(t, generatorFile), [])
  const types = await readFile(join(dir, 'plant-store.ts'), 'utf8')
  t.match(types, /\bid: bigint;/, 'ids are bigint in the types')
  t.notMatch(types, /\bid: number;/)
  t.strictSame(typeErrors(t, [generatorFile, exampleFile]), [], 'both type-check, no cast needed')
  t.ok(promised(example).length >= 3, `${promised(example).length} printed lines promised`)
  t.strictSame(await run(t, exampleFile), promised(example), 'the example prints what its comments say: ids exact')

  // What the page says of the CLI's types: an id is a number there, and a bigint does not pass.
  const service = await listeningService(t)
  await promisify(execFile)(resolve(ROOT, 'node_modules/.bin/openapi-typescript'),
    [`${service}/documentation/json`, '--output', join(dir, 'plant-store.ts')])
  const refused = typeErrors(t, [exampleFile]).filter((error) => error.includes("Type 'bigint' is not assignable to type 'number'"))
  t.equal(refused.length, 6, 'every bigint id the example passes (a body, four paths, a query) needs a cast with them')
})
