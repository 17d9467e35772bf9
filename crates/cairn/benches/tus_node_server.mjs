// The reference TUS server, for comparison: @tus/server with @tus/file-store.
// Usage: node tus_node_server.mjs PORT DIRECTORY
import http from 'node:http'
import { Server } from '@tus/server'
import { FileStore } from '@tus/file-store'

const [port, directory] = process.argv.slice(2)
const tus = new Server({ path: '/files', datastore: new FileStore({ directory }) })
http.createServer((req, res) => tus.handle(req, res)).listen(Number(port), '127.0.0.1', () => {
  console.log(`listening ${port}`)
})
