// A fast webhook receiver for `npm run bench:webhooks`, in a process of its own so that its CPU is
// not the service's: answers 204 at once, and prints how many deliveries it received, every 20 ms.
import { createServer } from 'node:http'

let received = 0
createServer((request, response) => {
  request.resume()
  request.on('end', () => {
    received++
    response.statusCode = 204
    response.end()
  })
}).listen(Number(process.argv[2]), '127.0.0.1')
setInterval(() => process.stdout.write(`${received}\n`), 20)
