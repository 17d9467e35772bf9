// Helia over HTTP only, as `@helia/http`'s `withHTTP` builds it and a web app runs it: no
// libp2p and no Bitswap; providers from one delegated router (HTTP Routing V1, the client's
// default filters), blocks from the trustless gateways it names, by the trustless-gateway
// block broker with its defaults: HTTPS only (`allowInsecure` off), and no loopback or
// private IP addresses (`allowLocal` off; a DNS name is allowed). No fallback gateways.
// Needs Node 22 or newer; TLS trusts Node's roots plus `NODE_EXTRA_CA_CERTS`.
//
//   node helia_http.mjs ROUTER_URL CID OUT_PATH TIMEOUT_SECONDS
//
// Writes a file's bytes to OUT_PATH, or a directory's tree under it (empty directories
// included), then prints one JSON line and exits 0:
//   {"helia": VERSION, "kind": "file" | "directory",
//    "blocks": N,                  blocks fetched from the network
//    "http": {"<gateway url>": N}, of which each gateway delivered
//    "routed": [{"peerId", "addrs", "protocols", "router"}],  providers the router named
//    "routerQueries": N}           provider queries sent to the router
// On failure it prints the error (with each block broker's own cause) on stderr and exits 1.
//
// Every block is looked up through the router, not once per root (no session), as a plain
// `unixfs.cat` does.

import { mkdir, open, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { delegatedHTTPRouter } from '@helia/delegated-routing-client'
import { trustlessGatewayBlockBroker } from '@helia/trustless-gateway-client'
import { unixfs } from '@helia/unixfs'
import { peerIdFromCID } from '@libp2p/peer-id'
import { MemoryBlockstore } from 'blockstore-core'
import { MemoryDatastore } from 'datastore-core'
import { createHeliaLight } from 'helia'
import { CID } from 'multiformats/cid'

const [router, cidText, out, timeout] = process.argv.slice(2)
if (timeout == null) {
  console.error('usage: node helia_http.mjs ROUTER_URL CID OUT_PATH TIMEOUT_SECONDS')
  process.exit(2)
}

/** What Helia's progress events say the fetch did. */
class FetchReport {
  blocks = 0
  http = {}
  routed = new Map()
  routerQueries = 0

  onProgress = (event) => {
    const detail = event.detail
    switch (event.type) {
      case 'blocks:get:blockstore:put':
        this.blocks += 1
        break
      case 'helia:block-broker:receive-block':
        if (detail.broker === 'trustless-gateway') {
          // The broker names a gateway by an identity CID of its URL.
          const url = new TextDecoder().decode(detail.provider.multihash.digest)
          this.http[url] = (this.http[url] ?? 0) + 1
        }
        break
      case 'helia:routing:find-providers:start':
        this.routerQueries += 1
        break
      case 'helia:routing:find-providers:provider': {
        const provider = {
          peerId: peerIdFromCID(detail.provider.id).toString(),
          addrs: detail.provider.multiaddrs.map(addr => addr.toString()),
          protocols: detail.provider.protocols ?? [],
          router: detail.router
        }
        this.routed.set(JSON.stringify(provider), provider)
        break
      }
    }
  }

  toJSON () {
    return {
      blocks: this.blocks,
      http: this.http,
      routed: [...this.routed.values()],
      routerQueries: this.routerQueries
    }
  }
}

/** Write the UnixFS entry `cid` to `path`: a file's bytes, or a directory tree. */
async function exportTo (fs, cid, path, options) {
  const root = await fs.stat(cid, options)
  if (root.type !== 'directory') {
    await writeFileFrom(fs, cid, path, options)
    return 'file'
  }
  // An explicit stack: a deep tree must not exhaust the JS stack.
  const pending = [{ cid, path }]
  while (pending.length > 0) {
    const dir = pending.pop()
    await mkdir(dir.path, { recursive: true })
    for await (const entry of fs.ls(dir.cid, options)) {
      const target = join(dir.path, entry.name)
      const { type } = await fs.stat(entry.cid, options)
      if (type === 'directory') {
        pending.push({ cid: entry.cid, path: target })
      } else {
        await writeFileFrom(fs, entry.cid, target, options)
      }
    }
  }
  return 'directory'
}

async function writeFileFrom (fs, cid, path, options) {
  const file = await open(path, 'w')
  try {
    for await (const chunk of fs.cat(cid, options)) {
      await file.write(chunk)
    }
  } finally {
    await file.close()
  }
}

const helia = createHeliaLight({
  blockstore: new MemoryBlockstore(),
  datastore: new MemoryDatastore()
})
// No `cacheTTL`: each lookup asks the router afresh.
helia.addRouter(delegatedHTTPRouter({ url: router, cacheTTL: 0 }))
helia.addBlockBroker(trustlessGatewayBlockBroker())
await helia.start()
const report = new FetchReport()
try {
  const options = { signal: AbortSignal.timeout(Number(timeout) * 1000), onProgress: report.onProgress }
  const kind = await exportTo(unixfs(helia), CID.parse(cidText), out, options)
  // helia's package.json is not among its exports; read it beside the resolved entry point.
  const heliaPackage = JSON.parse(await readFile(new URL('../../package.json', import.meta.resolve('helia'))))
  process.stdout.write(JSON.stringify({ helia: heliaPackage.version, kind, ...report.toJSON() }) + '\n')
} catch (err) {
  // Helia's LoadBlockFailedError carries each broker's own failure.
  const causes = (err.errors ?? []).map(cause => `${cause.name}: ${cause.message}`)
  const because = causes.length > 0 ? ` (${causes.join('; ')})` : ''
  console.error(`${err.name}: ${err.message}${because}`)
  console.error('so far:', JSON.stringify(report.toJSON()))
  process.exitCode = 1
} finally {
  await helia.stop()
}
