// The baseline: the least a Node.js server must do for POST /plants (read the body, check the token
// and the two fields by hand, answer JSON), storing nothing. Run as its own process: PORT, TOKEN.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'

const token = process.env.TOKEN ?? ''
const port = Number(process.env.PORT ?? 3000)

function send (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers })
  res.end(JSON.stringify(body))
}

function fail (res: ServerResponse, status: number, message: string, headers?: Record<string, string>) {
  send(res, status, { error: status, message }, headers)
}

async function readBody (req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

function isPlant (body: unknown): body is { id: number, name: string, tag?: string } {
  if (typeof body !== 'object' || body === null) return false
  const { id, name, tag } = body as Record<string, unknown>
  return Number.isInteger(id) && typeof name === 'string' && (tag === undefined || typeof tag === 'string')
}

async function createPlant (req: IncomingMessage, res: ServerResponse) {
  if (req.headers.authorization !== `Bearer ${token}`) {
    req.resume()
    return fail(res, 401, 'A valid bearer token is required', { 'www-authenticate': 'Bearer realm="plant-store"' })
  }
  let body: unknown
  try {
    body = JSON.parse(await readBody(req))
  } catch {
    return fail(res, 400, 'The body is not valid JSON')
  }
  if (!isPlant(body)) return fail(res, 400, 'The body is not a valid plant')
  send(res, 200, body.tag === undefined ? { name: body.name } : { name: body.name, tag: body.tag })
}

const server = createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/plants') {
    createPlant(req, res).catch(() => fail(res, 500, 'Internal error'))
  } else if (req.method === 'GET' && (req.url === '/healthz' || req.url === '/readyz')) {
    send(res, 200, { status: 'ok' })
  } else {
    req.resume()
    fail(res, 404, 'Not found')
  }
})

server.listen(port, '127.0.0.1')
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    server.close(() => process.exit(0))
    server.closeAllConnections()
  })
}
