// Fetch ipfs://CID/PATH with @helia/verified-fetch, using our gateway and nothing else: a
// light Helia node with HTTP only (no libp2p, no delegated routers, no public gateways).
// Usage: node verified_fetch.mjs GATEWAY CID PATH OUT
import fs from 'node:fs'
import { createHeliaLight } from 'helia'
import { withHTTP } from '@helia/http'
import { createVerifiedFetch } from '@helia/verified-fetch'

const [gateway, cid, path, out] = process.argv.slice(2)
const helia = withHTTP(createHeliaLight(), {
  delegatedRouters: [],
  recursiveGateways: [gateway],
  allowInsecure: true,
  allowLocal: true
})
// Helia waits forever for providers when it has no router other than fallbacks: its provider
// stream only ends when some default router finishes. This one finds nothing, at once.
helia.addRouter({ name: 'none', async * findProviders () {} })
await helia.start()
const verifiedFetch = await createVerifiedFetch(helia)
const response = await verifiedFetch(`ipfs://${cid}${path}`)
if (!response.ok) {
  console.error(`status ${response.status}: ${await response.text()}`)
  process.exit(1)
}
fs.writeFileSync(out, Buffer.from(await response.arrayBuffer()))
console.log(`fetched ${response.status} ${response.headers.get('content-type')}`)
await verifiedFetch.stop()
await helia.stop()
