// Helia's IPNS (`@helia/ipns`) with Cairn as its only router, as a web app that has no DHT:
// resolves a name Cairn keeps through Cairn's `/routing/v1/ipns`, reads the content behind it
// from Cairn's gateway (the trustless-gateway block broker; plain HTTP on loopback allowed),
// then publishes a name of its own through the same router (a record js-ipns signed, which
// Cairn must verify before it keeps it) and resolves that back.
// Needs Node 22 or newer.
//
//   node helia_ipns.mjs ROUTER_URL NAME PUBLISH_CID TIMEOUT_SECONDS
//
// Prints one JSON line and exits 0:
//   {"resolved": {"value", "sequence"}, "text": "<the content behind NAME>",
//    "published": {"name", "value"}}
// On failure it prints the error on stderr and exits 1.

import { delegatedHTTPRouter } from '@helia/delegated-routing-client'
import { ipns } from '@helia/ipns'
import { trustlessGatewayBlockBroker } from '@helia/trustless-gateway-client'
import { unixfs } from '@helia/unixfs'
import { MemoryBlockstore } from 'blockstore-core'
import { MemoryDatastore } from 'datastore-core'
import { createHeliaLight } from 'helia'
import { CID } from 'multiformats/cid'

const [router, name, publishCid, timeout] = process.argv.slice(2)
if (timeout == null) {
  console.error('usage: node helia_ipns.mjs ROUTER_URL NAME PUBLISH_CID TIMEOUT_SECONDS')
  process.exit(2)
}

/** The last result of a (recursive) resolve. */
async function resolve (names, key, signal) {
  let last
  for await (const result of names.resolve(key, { signal, nocache: true })) {
    last = result
  }
  if (last == null) throw new Error(`${key} resolved to nothing`)
  return last
}

const helia = await createHeliaLight({
  blockstore: new MemoryBlockstore(),
  datastore: new MemoryDatastore(),
  routers: [delegatedHTTPRouter({ url: router })],
  blockBrokers: [trustlessGatewayBlockBroker({ allowInsecure: true, allowLocal: true })]
})
try {
  const signal = AbortSignal.timeout(Number(timeout) * 1000)
  const names = ipns(helia)
  const resolved = await resolve(names, name, signal)
  const cid = CID.parse(resolved.value.replace(/^\/ipfs\//, '').split('/')[0])
  const chunks = []
  for await (const chunk of unixfs(helia).cat(cid, { signal })) chunks.push(chunk)
  const text = Buffer.concat(chunks).toString('utf8')

  const published = await names.publish('helia-site', CID.parse(publishCid), { signal })
  const back = await resolve(names, published.name, signal)
  console.log(JSON.stringify({
    resolved: { value: resolved.value, sequence: Number(resolved.record.sequence) },
    text,
    published: { name: published.name, value: back.value }
  }))
} catch (err) {
  console.error(err?.stack ?? String(err))
  process.exitCode = 1
} finally {
  await helia.stop()
}
