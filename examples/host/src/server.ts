import { buildHost } from './app.js'

const app = await buildHost({ logger: true })
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 3000) })
