// Helia 7 (npm `helia`), driven over JSON lines: one command per line on stdin, one answer
// per line on stdout, `{"ok": true, ...}` or `{"ok": false, "error": "..."}`, in order.
// On start it prints `{"helia": VERSION, "node": VERSION}`. Needs Node 22 or newer.
//
// Every command builds a Helia node of its own (memory blockstore and datastore, a fresh
// peer id) and stops it before answering, so nothing fetched, dialled or cached by one
// command helps the next, and what a fetch reports is what that fetch did. Nothing is on
// by default: no bootstrap peers, mDNS, UPnP, AutoTLS, relays, public delegated routers or
// gateways; the node dials only what the command names, over TCP (Noise, Yamux), and does
// not listen.
//
//   {"cmd": "fetch", "cid": "...", "path": "/abs/out", "timeout": 30,
//    "from": ["/ip4/127.0.0.1/tcp/N/p2p/Qm..."]}
//       Bitswap from these peers (a session given them as its providers).
//   {"cmd": "fetch", "cid": "...", "path": "/abs/out", "timeout": 30,
//    "router": "http://127.0.0.1:N", "brokers": ["bitswap", "trustless-gateway"],
//    "session": true}
//       Providers from a delegated router (HTTP Routing V1, as @helia/delegated-routing-client
//       asks: its default filter-addrs and filter-protocols, no cache), blocks over the
//       brokers named (default both). `session: true` (default) finds providers for the root
//       once and asks them for every block, as @helia/verified-fetch does; `session: false`
//       asks the router about every block, as a plain `unixfs.cat` does. The
//       trustless-gateway broker is allowed `http://` and loopback gateways
//       (`allowInsecure`, `allowLocal`).
//     -> {"kind": "file" | "directory", "peerId": "<this fetch's node>",
//         "blocks": N,               blocks fetched from the network
//         "http": {"<url>": N},      of which each gateway delivered (over HTTP)
//         "bitswapBlocks": N,        the rest, delivered over Bitswap
//         "bitswapPeers": [...],     peers Bitswap sent wants to
//         "routed": [{"peerId", "addrs", "protocols", "router"}],  providers routers named
//         "routerQueries": N}        provider queries sent to the delegated router
//   {"cmd": "find_providers", "cid": "...", "via": "/ip4/.../p2p/Qm...", "timeout": 30}
//     -> {"providers": [{"peerId", "addrs", "from"}]}
//       A LAN DHT (`/ipfs/lan/kad/1.0.0`, Kubo's) client query entered through `via`;
//       `from` is the peer that answered with each provider record.
//
// A fetch writes a file's bytes to `path`, or a directory's tree under `path` (which it
// creates, empty directories included).

import { mkdir, open, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { withBitswap } from '@helia/bitswap'
import { delegatedHTTPRouter } from '@helia/delegated-routing-client'
import { withLibp2pLight } from '@helia/libp2p'
import { trustlessGatewayBlockBroker } from '@helia/trustless-gateway-client'
import { unixfs } from '@helia/unixfs'
import { identify } from '@libp2p/identify'
import { kadDHT, removePublicAddressesMapper } from '@libp2p/kad-dht'
import { peerIdFromCID } from '@libp2p/peer-id'
import { ping } from '@libp2p/ping'
import { tcp } from '@libp2p/tcp'
import { multiaddr } from '@multiformats/multiaddr'
import { MemoryBlockstore } from 'blockstore-core'
import { MemoryDatastore } from 'datastore-core'
import { createHeliaLight } from 'helia'
import { CID } from 'multiformats/cid'

const BROKERS = ['bitswap', 'trustless-gateway']
// Kubo's LAN DHT, the one that holds loopback and private addresses.
const LAN_DHT_PROTOCOL = '/ipfs/lan/kad/1.0.0'

class CommandFailed extends Error {}

/** A started Helia node that dials only what it is told to, with the given parts. */
async function node ({ brokers = [], router, dht = false }) {
  const helia = createHeliaLight({
    blockstore: new MemoryBlockstore(),
    datastore: new MemoryDatastore()
  })
  const services = { identify: identify() }
  if (dht) {
    services.ping = ping()
    services.dht = kadDHT({
      protocol: LAN_DHT_PROTOCOL,
      clientMode: true,
      peerInfoMapper: removePublicAddressesMapper
    })
  }
  withLibp2pLight(helia, {
    addresses: { listen: [] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    peerDiscovery: [],
    services
  })
  if (router != null) {
    // No `cacheTTL`: each fetch asks the router afresh.
    helia.addRouter(delegatedHTTPRouter({ url: router, cacheTTL: 0 }))
  }
  if (brokers.includes('bitswap')) {
    withBitswap(helia)
  }
  if (brokers.includes('trustless-gateway')) {
    helia.addBlockBroker(trustlessGatewayBlockBroker({ allowInsecure: true, allowLocal: true }))
  }
  await helia.start()
  return helia
}

async function fetch (request) {
  const cid = CID.parse(request.cid)
  const signal = AbortSignal.timeout(request.timeout * 1000)
  const from = request.from ?? []
  if ((from.length > 0) === (request.router != null)) {
    throw new CommandFailed('fetch needs exactly one of "from" (multiaddrs) or "router" (URL)')
  }
  const brokers = from.length > 0 ? ['bitswap'] : (request.brokers ?? BROKERS)
  for (const broker of brokers) {
    if (!BROKERS.includes(broker)) {
      throw new CommandFailed(`unknown broker ${broker}: known are ${BROKERS.join(', ')}`)
    }
  }
  const helia = await node({ brokers, router: request.router })
  const report = new FetchReport()
  try {
    let blockstore = helia.blockstore
    if (from.length > 0 || request.session !== false) {
      blockstore = helia.blockstore.createSession(cid, {
        providers: from.map(addr => multiaddr(addr)),
        signal,
        onProgress: report.onProgress
      })
    }
    const fs = unixfs({ blockstore })
    const kind = await exportTo(fs, cid, request.path, { signal, onProgress: report.onProgress })
    return { kind, peerId: helia.libp2p.peerId.toString(), ...report.toJSON() }
  } finally {
    await helia.stop()
  }
}

/**
 * What Helia's progress events say a fetch did. Helia does not say which broker delivered
 * a block fetched through a Bitswap session, but the trustless-gateway broker reports every
 * block it receives, so the Bitswap share is the rest.
 */
class FetchReport {
  blocks = 0
  http = {}
  bitswapPeers = new Set()
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
      case 'bitswap:send-wantlist':
        this.bitswapPeers.add(detail.toString())
        break
      case 'helia:routing:find-providers:start':
        if (detail.router === 'delegated-http-router') {
          this.routerQueries += 1
        }
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
    const overHttp = Object.values(this.http).reduce((sum, n) => sum + n, 0)
    return {
      blocks: this.blocks,
      bitswapBlocks: Math.max(this.blocks - overHttp, 0),
      http: this.http,
      bitswapPeers: [...this.bitswapPeers],
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

async function findProviders (request) {
  const cid = CID.parse(request.cid)
  const signal = AbortSignal.timeout(request.timeout * 1000)
  const helia = await node({ dht: true })
  try {
    const dht = helia.libp2p.services.dht
    await helia.libp2p.dial(multiaddr(request.via), { signal })
    // A query starts from the routing table, which gains the peer once identify has
    // shown that it speaks the LAN DHT protocol.
    while (dht.routingTable.size === 0) {
      signal.throwIfAborted()
      await new Promise(resolve => setTimeout(resolve, 20))
    }
    const providers = []
    for await (const event of dht.findProviders(cid, { signal })) {
      if (event.name === 'PROVIDER') {
        for (const provider of event.providers) {
          providers.push({
            peerId: provider.id.toString(),
            addrs: provider.multiaddrs.map(addr => addr.toString()),
            from: event.from.toString()
          })
        }
      }
    }
    return { providers }
  } finally {
    await helia.stop()
  }
}

const COMMANDS = { fetch, find_providers: findProviders }

function answer (fields) {
  process.stdout.write(JSON.stringify(fields) + '\n')
}

// A fetch that fails can leave block loads it started in the background to fail after it
// answered; Node would end the process for such a rejection nobody awaits. They are logged
// instead, and the driver goes on with the next command.
process.on('unhandledRejection', (err) => {
  console.error('unhandled rejection (a failed command\'s leftover):', err)
})

// helia's package.json is not among its exports; read it beside the resolved entry point.
const heliaPackage = JSON.parse(await readFile(new URL('../../package.json', import.meta.resolve('helia'))))
answer({ helia: heliaPackage.version, node: process.version })
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') {
    continue
  }
  try {
    const request = JSON.parse(line)
    const command = COMMANDS[request.cmd]
    if (command == null) {
      throw new CommandFailed(`unknown command ${JSON.stringify(request.cmd)}`)
    }
    answer({ ok: true, ...await command(request) })
  } catch (err) {
    // Helia's LoadBlockFailedError carries each broker's own failure.
    const causes = (err.errors ?? []).map(cause => `${cause.name}: ${cause.message}`)
    const because = causes.length > 0 ? ` (${causes.join('; ')})` : ''
    answer({ ok: false, error: `${err.name}: ${err.message}${because}` })
  }
}
