// Reads an IPNI advertisement chain back from a publisher over HTTP (ipnisync) and checks it
// the way go-libipni's sync client and storetheindex do.
//
//   node read_chain.mjs BASE_URL PUBLISHER_PEER_ID      (BASE_URL like http://127.0.0.1:8080)
//
// Prints one JSON object, {"head","topic","ads":[...]} with ads newest first, and for each
// ad its entry multihashes (hex) in chain order: the chunk `Entries` links to first. On the
// first failed check it prints one line to stderr naming the CID and the check, and exits 1.
import * as dagJson from '@ipld/dag-json'
import { publicKeyFromProtobuf } from '@libp2p/crypto/keys'
import { peerIdFromPublicKey, peerIdFromString } from '@libp2p/peer-id'
import { RecordEnvelope } from '@libp2p/peer-record'
import { equals } from 'multiformats/bytes'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { sha256 } from 'multiformats/hashes/sha2'

const MAX_ADS = 10_000
const MAX_CHUNKS = 100_000 // per ad
// go-libipni schema.NoEntries: CIDv1 raw, sha2-256 of no bytes truncated to 16 bytes.
const NO_ENTRIES = CID.parse('bafkreehdwdcefgh4dqkjv67uzcmw7oje')
const AD_SIG_DOMAIN = 'indexer'
const AD_SIG_CODEC = '/indexer/ingest/adSignature'

class CheckFailed extends Error {}
const check = (ok, what, message) => { if (!ok) throw new CheckFailed(`${what}: ${message}`) }
const te = new TextEncoder()
const hex = (bytes) => Buffer.from(bytes).toString('hex')
const concat = (parts) => new Uint8Array(Buffer.concat(parts))
const isBytes = (v) => v instanceof Uint8Array
const isLink = (v) => CID.asCID(v) != null
const isStrings = (v) => Array.isArray(v) && v.every((s) => typeof s === 'string')
const describe = (v) => v === undefined ? 'missing' : v === null ? 'null' : isLink(v) ? 'a link' : isBytes(v) ? `${v.length} bytes` : Array.isArray(v) ? 'a list' : typeof v

// Advertisement fields (go-libipni ingest/schema/schema.ipldsch). Optional fields are absent,
// never null. ExtendedProvider is left out on purpose: Cairn does not publish it.
const AD_FIELDS = {
  PreviousID: (v) => v === undefined || isLink(v),
  Provider: (v) => typeof v === 'string',
  Addresses: isStrings,
  Signature: isBytes,
  Entries: isLink,
  ContextID: (v) => isBytes(v) && v.length <= 64, // schema.MaxContextIDLen
  Metadata: (v) => isBytes(v) && v.length <= 1024, // schema.MaxMetadataLen
  IsRm: (v) => typeof v === 'boolean'
}
const CHUNK_FIELDS = {
  Entries: (v) => Array.isArray(v) && v.length > 0 && v.every(isBytes), // an empty list is NoEntries instead
  Next: (v) => v === undefined || isLink(v)
}
function checkFields (value, fields, what) {
  check(value !== null && typeof value === 'object' && !Array.isArray(value) && !isLink(value), what, 'not a map')
  for (const key of Object.keys(value)) check(Object.hasOwn(fields, key), what, `unexpected field ${key}`)
  for (const [key, ok] of Object.entries(fields)) check(ok(value[key]), what, `field ${key} is invalid: ${describe(value[key])}`)
}

const [base, publisher] = process.argv.slice(2)

async function get (path, what, schemaHint) {
  const url = `${base.replace(/\/+$/, '')}/ipni/v1/ad/${path}`
  // The hint header is what go-libipni's client sends; publishers may ignore it.
  const headers = schemaHint ? { 'Ipni-Cid-Schema-Type': schemaHint } : {}
  let res
  try { res = await fetch(url, { headers }) } catch (e) { throw new CheckFailed(`${what}: GET ${url} failed: ${e.cause?.message ?? e.message}`) }
  return { status: res.status, body: new Uint8Array(await res.arrayBuffer()) }
}

function decode (body, what) {
  try { return dagJson.decode(body) } catch (e) { throw new CheckFailed(`${what}: body is not dag-json: ${e.message}`) }
}

// Fetches an ad or entry chunk and checks what go-libipni's client checks of every block.
async function fetchBlock (cid, kind, schemaHint) {
  const what = `${kind} ${cid}`
  // schema.Linkproto: both ads and entry chunks are CIDv1 dag-json (0x0129) sha2-256.
  check(cid.version === 1 && cid.code === dagJson.code, what, `CID is not CIDv1 dag-json (0x0129) but v${cid.version} codec 0x${cid.code.toString(16)}`)
  check(cid.multihash.code === sha256.code, what, `CID's multihash is 0x${cid.multihash.code.toString(16)}, not sha2-256`)
  const { status, body } = await get(cid.toString(), what, schemaHint)
  check(status === 200, what, `GET returned HTTP ${status}`)
  check(equals((await sha256.digest(body)).bytes, cid.multihash.bytes), what, 'body does not hash (sha2-256) to the CID')
  const value = decode(body, what)
  // A Go publisher serves dagjson.Encode(load(cid)), so only canonical bytes hash to their CID.
  check(equals(dagJson.encode(value), body), what, 'body is not canonical dag-json (re-encoding changes it)')
  return value
}

// go-libipni (*Advertisement).VerifySignature, plus storetheindex's signer == Provider check.
async function verifyAdSignature (ad, what) {
  let env
  try { env = await RecordEnvelope.openAndCertify(ad.Signature, AD_SIG_DOMAIN) } catch (e) {
    throw new CheckFailed(`${what}: Signature envelope does not verify for domain "${AD_SIG_DOMAIN}": ${e.message}`)
  }
  // Go covers the payload type only through the signature; ours must be the ad codec.
  check(new TextDecoder().decode(env.payloadType) === AD_SIG_CODEC, what, `Signature payload type is not ${AD_SIG_CODEC}`)
  // Binary CIDs and strings back to back, no separators; ContextID is not signed. Go also
  // accepts a legacy unhashed payload (length != 34); a new publisher must not produce it.
  const signed = concat([ad.PreviousID?.bytes ?? new Uint8Array(), ad.Entries.bytes, te.encode(ad.Provider),
    ...ad.Addresses.map((a) => te.encode(a)), ad.Metadata, Uint8Array.of(ad.IsRm ? 1 : 0)])
  check(equals((await sha256.digest(signed)).bytes, env.payload), what,
    'Signature payload is not sha2-256(PreviousID ‖ Entries ‖ Provider ‖ Addresses ‖ Metadata ‖ IsRm)')
  let provider
  try { provider = peerIdFromString(ad.Provider) } catch { throw new CheckFailed(`${what}: Provider ${ad.Provider} is not a peer id`) }
  const signer = peerIdFromPublicKey(env.publicKey)
  check(signer.equals(provider), what, `Signature is by ${signer}, not by the Provider ${provider}`)
}

async function readEntries (entries, adWhat) {
  const multihashes = []
  let chunks = 0
  for (let cid = entries; cid !== undefined; chunks++) {
    check(chunks < MAX_CHUNKS, adWhat, `more than ${MAX_CHUNKS} entry chunks`)
    const chunk = await fetchBlock(cid, 'entry chunk', 'EntryChunk')
    checkFields(chunk, CHUNK_FIELDS, `entry chunk ${cid}`)
    for (const mh of chunk.Entries) {
      try { Digest.decode(mh) } catch (e) { throw new CheckFailed(`entry chunk ${cid}: entry ${hex(mh)} is not a multihash: ${e.message}`) }
      multihashes.push(hex(mh))
    }
    cid = chunk.Next
  }
  return { multihashes, chunks }
}

async function main () {
  let publisherId
  try { publisherId = peerIdFromString(publisher) } catch { throw new CheckFailed(`PUBLISHER_PEER_ID ${publisher} is not a peer id`) }
  const headRes = await get('head', 'head')
  if (headRes.status === 204) return { head: null, ads: [] } // nothing published yet
  check(headRes.status === 200, 'head', `GET returned HTTP ${headRes.status}`)
  const signedHead = decode(headRes.body, 'head')
  checkFields(signedHead, { head: isLink, pubkey: isBytes, sig: isBytes, topic: (v) => v === undefined || typeof v === 'string' }, 'head')
  const head = signedHead.head
  let key
  try { key = publicKeyFromProtobuf(signedHead.pubkey) } catch (e) { throw new CheckFailed(`head ${head}: pubkey is not a protobuf public key: ${e.message}`) }
  // head.SignedHead: a plain signature over the binary CID and the topic, no hash or envelope.
  const signedBytes = concat([head.bytes, te.encode(signedHead.topic ?? '')])
  check(await key.verify(signedBytes, signedHead.sig), `head ${head}`, 'sig does not verify over head CID bytes ‖ topic with pubkey')
  const signer = peerIdFromPublicKey(key)
  check(signer.equals(publisherId), `head ${head}`, `signed by ${signer}, not by the publisher ${publisherId}`)

  const ads = []
  for (let cid = head; cid !== undefined;) {
    check(ads.length < MAX_ADS, `ad ${cid}`, `chain is longer than ${MAX_ADS} ads`)
    const what = `ad ${cid}`
    const ad = await fetchBlock(cid, 'ad', 'Advertisement')
    checkFields(ad, AD_FIELDS, what)
    await verifyAdSignature(ad, what)
    const { multihashes, chunks } = ad.Entries.equals(NO_ENTRIES) ? { multihashes: [], chunks: 0 } : await readEntries(ad.Entries, what)
    ads.push({
      cid: cid.toString(),
      provider: ad.Provider,
      addresses: ad.Addresses,
      contextId: hex(ad.ContextID),
      metadata: hex(ad.Metadata),
      isRm: ad.IsRm,
      entries: ad.Entries.toString(),
      multihashes,
      chunks
    })
    cid = ad.PreviousID
  }
  return { head: head.toString(), topic: signedHead.topic ?? null, ads }
}

if (process.argv.length !== 4) {
  console.error('usage: node read_chain.mjs BASE_URL PUBLISHER_PEER_ID')
  process.exitCode = 2
} else {
  try {
    // exitCode rather than exit(): stdout must drain first when it is a pipe.
    process.stdout.write(JSON.stringify(await main()) + '\n')
  } catch (e) {
    console.error(`read_chain: ${e instanceof CheckFailed ? e.message : `unexpected error: ${e}`}`)
    process.exitCode = 1
  }
}
