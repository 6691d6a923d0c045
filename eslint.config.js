import neostandard from 'neostandard'

// The plugin is src/ plugins/ routes/ schemas/. Code outside it reaches plugins/ and routes/ only
// through src/'s faces (plugin.ts, service-api.ts, service-settings.ts, postgres-schema.ts); schemas/ is the wire contract, open to all.
// Tests are exempt: they test the internals themselves.
const INTERNAL = String.raw`^(\.\.\/)+(plugins|routes)(\/|$)`
const THROUGH_FACES = 'plugins/ and routes/ are the plugin\'s internals: import them through a face in src/ (plugin.js, service-api.js, service-settings.js, postgres-schema.js)'

const seam = {
  files: ['**/*.{js,mjs,cjs,ts,mts,cts}'],
  ignores: ['src/**', 'plugins/**', 'routes/**', 'schemas/**', 'test/**'],
  rules: {
    'no-restricted-imports': ['error', { patterns: [{ regex: INTERNAL, message: THROUGH_FACES }] }],
    'no-restricted-syntax': ['error', { selector: `ImportExpression > Literal[value=/${INTERNAL}/]`, message: THROUGH_FACES }]
  }
}

export default [...neostandard({ ts: true, ignores: ['dist/**', 'coverage/**', '.tap/**'] }), seam]
