import { writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import ts from 'typescript'
import { codeBlocks, PAGES, ROOT } from '../../helpers/docs-pages.js'

// The TypeScript blocks of README.md and docs/ type-check as written, against this repository's
// sources under the package's names, with the project's compiler options. Blocks taken from a
// file are that file (file-blocks.test.ts; CI type-checks and runs them), and the client's page is
// run by test/client/client-docs.test.ts.

const RUN_ELSEWHERE = new Set(['docs/client.md'])
const PACKAGE = { 'plant-store': 'src/plugin.js', 'plant-store/client': 'client/index.js', 'plant-store/store-contract': 'plugins/store/contract.js' }

t.test('every TypeScript block of README.md and docs/ type-checks', async (t) => {
  const blocks = PAGES.flatMap(codeBlocks).filter(({ lang, file, page }) => lang === 'ts' && file === undefined && !RUN_ELSEWHERE.has(page))
  t.ok(blocks.length >= 3, `${blocks.length} blocks: README's embedding example, a shared pool, a receiver`)
  const dir = t.testdir({})
  const files = blocks.map(({ code }, index) => {
    const file = join(dir, `block-${index}.ts`)
    writeFileSync(file, code.replace(/from '(plant-store(\/[\w-]+)?)'/g, (_import, name: keyof typeof PACKAGE) =>
      `from '${relative(dir, join(ROOT, PACKAGE[name]))}'`))
    return file
  })
  const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, 'tsconfig.json'), {}, {
    ...ts.sys, onUnRecoverableConfigFileDiagnostic: (diagnostic) => t.fail(String(diagnostic.messageText))
  })!
  const program = ts.createProgram(files, { ...config.options, noEmit: true })
  blocks.forEach(({ page, line }, index) => {
    const errors = ts.getPreEmitDiagnostics(program, program.getSourceFile(files[index]))
      .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
    t.strictSame(errors, [], `${page}:${line} type-checks`)
  })
})
