import { createRequire } from 'node:module'

/**
 * In a test group's process, every Fastify instance shares the answer serializers it compiles:
 * the same route's schema with the same shared schemas and options gets the function compiled
 * before. fast-json-stringify compiled each route's answers again for every app a test builds,
 * the largest part of building one (with Ajv's, which plugins/http/validation.ts shares itself).
 * A compiled serializer holds no state; each is still compiled, once, by Fastify's own compiler.
 * Installed before Fastify first asks for its serializer compiler, which it requires lazily.
 */
type Compile = (route: { schema: unknown }) => (data: unknown) => string
type Factory = (externalSchemas: unknown, options: unknown) => Compile
type Selector = (() => Factory) & { SerializerSelector: () => Factory }

const fastifyRequire = createRequire(createRequire(import.meta.url).resolve('fastify'))
const path = fastifyRequire.resolve('@fastify/fast-json-stringify-compiler')
const original = fastifyRequire(path) as Selector
const compiled = new Map<string, (data: unknown) => string>()

function SharedSerializerSelector (): Factory {
  const build = original.SerializerSelector()
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options)
    const context = JSON.stringify([externalSchemas, options])
    return (route) => {
      const key = `${context}${JSON.stringify(route.schema)}`
      let serialize = compiled.get(key)
      if (serialize === undefined) compiled.set(key, serialize = compile(route))
      return serialize
    }
  }
}

const module = fastifyRequire.cache[path]!
module.exports = Object.assign(SharedSerializerSelector, original, { default: SharedSerializerSelector, SerializerSelector: SharedSerializerSelector })
