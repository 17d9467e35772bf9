// The page's way to the server: JSON requests with the bearer token to the account host (this
// page's origin: the upload limit, usage, uploads, keys, webhooks and the account's events)
// and the upload host (from /api/web-config: operations, their event streams, pins, names and
// upload links), each error body turned into an ApiError carrying the server's own message;
// plus the gateway links for a CID.

/** An error the server answered with (or a failure to reach it: status 0). */
export class ApiError extends Error {
  constructor (status, code, message) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.code = code
  }
}

/**
 * The error a response carries. Cairn's routes answer `{"error", "message"}`; the Pinning
 * Service API at /pins answers `{"error": {"reason", "details"}}`. Anything else (a proxy's
 * HTML page) gets a message from the status alone.
 */
export async function errorFrom (response) {
  let body = null
  try {
    body = await response.json()
  } catch {
    // Not JSON: fall through to the status line.
  }
  const error = body?.error
  if (typeof error === 'string') {
    return new ApiError(response.status, error, body.message || error)
  }
  if (error && typeof error === 'object') {
    const code = String(error.reason || 'error').toLowerCase()
    return new ApiError(response.status, code, error.details || code)
  }
  return new ApiError(response.status, 'http_' + response.status,
    `The server answered ${response.status} ${response.statusText}`.trim())
}

/** A fetch that failed before any answer (offline, server down, CORS refused). */
export function unreachable (url, cause) {
  const error = new ApiError(0, 'unreachable', `Cannot reach ${new URL(url).origin}: is the server running?`)
  error.cause = cause
  return error
}

/** The deployment's public settings; needs no token. */
export async function webConfig () {
  let response
  try {
    response = await fetch('/api/web-config', { cache: 'no-store' })
  } catch (cause) {
    throw unreachable(location.href, cause)
  }
  if (!response.ok) throw await errorFrom(response)
  const config = await response.json()
  return {
    uploadUrl: String(config.uploadUrl).replace(/\/+$/, ''),
    subdomainGateway: config.subdomainGateway || null
  }
}

export class Api {
  /** @param {string} token  @param {{uploadUrl: string, subdomainGateway: string|null}} config */
  constructor (token, config) {
    this.token = token
    this.config = config
  }

  get uploadUrl () { return this.config.uploadUrl }

  /** Headers every authenticated request carries. */
  authHeaders (extra = {}) {
    return { Authorization: `Bearer ${this.token}`, ...extra }
  }

  /** A request to the account host (same origin), answered with JSON or nothing. */
  account (path, init) { return this.request(path, init) }

  /** A request to the upload host. */
  upload (path, init) { return this.request(this.uploadUrl + path, init) }

  async request (url, { method = 'GET', json, signal } = {}) {
    const headers = this.authHeaders(json === undefined ? {} : { 'Content-Type': 'application/json' })
    let response
    try {
      response = await fetch(url, {
        method,
        headers,
        signal,
        cache: 'no-store',
        body: json === undefined ? undefined : JSON.stringify(json)
      })
    } catch (cause) {
      if (cause.name === 'AbortError') throw cause
      throw unreachable(new URL(url, location.href).href, cause)
    }
    if (!response.ok) throw await errorFrom(response)
    // 204 (and the pins API's 202 for a removal) carry no body.
    const type = response.headers.get('content-type') || ''
    return type.startsWith('application/json') ? response.json() : null
  }

  /** `{limit, storedBytes, quota}`; a 401 here means the token is not accepted. */
  uploadLimit () { return this.account('/api/upload-limit') }

  operation (id, signal) { return this.upload(`/api/operations/${encodeURIComponent(id)}`, { signal }) }

  /**
   * The URL of an operation's event stream (Server-Sent Events). `EventSource` cannot send
   * headers, so the token goes in the query, which the stream routes accept as `access_token`.
   */
  operationEventsUrl (id) {
    const query = new URLSearchParams({ access_token: this.token })
    return `${this.uploadUrl}/api/operations/${encodeURIComponent(id)}/events?${query}`
  }

  /** This month's usage: `{storedBytes, quota, uploads, pins, uploadedBytes, servedBytes, period}`. */
  usage () { return this.account('/api/usage') }

  /**
   * One page of uploads, newest first. `search` is a CID or part of a name; `keyvalues`, pairs
   * every upload listed has (`kv=key:value`, which the server splits at the first `:`).
   */
  listUploads ({ search = '', keyvalues = {}, cursor = null, limit = 10 } = {}) {
    const query = new URLSearchParams({ limit: String(limit) })
    addSearch(query, search)
    for (const [key, value] of Object.entries(keyvalues)) query.append('kv', `${key}:${value}`)
    if (cursor) query.set('cursor', cursor)
    return this.account(`/api/uploads?${query}`)
  }

  /**
   * Renames an upload and changes its key-values: `{name?, keyvalues?}`, the key-values merged
   * into the upload's (a `null` value removes its key). Answers the upload as it is now.
   */
  changeUpload (id, changes) {
    return this.account(`/api/uploads/${encodeURIComponent(id)}`, { method: 'PATCH', json: changes })
  }

  deleteUpload (id) { return this.account(`/api/uploads/${encodeURIComponent(id)}`, { method: 'DELETE' }) }

  /**
   * One page of pins (uploads included), newest first; paged by `before` (a `created`).
   * `keyvalues` filters by the pins' `meta`, which is an upload's key-values.
   */
  listPins ({ search = '', keyvalues = {}, before = null, limit = 10 } = {}) {
    const query = new URLSearchParams({ limit: String(limit) })
    addSearch(query, search)
    if (Object.keys(keyvalues).length > 0) query.set('meta', JSON.stringify(keyvalues))
    if (before) query.set('before', before)
    return this.upload(`/pins?${query}`)
  }

  addPin (cid, name) {
    return this.upload('/pins', { method: 'POST', json: name ? { cid, name } : { cid } })
  }

  pinStatus (requestId) { return this.upload(`/pins/${encodeURIComponent(requestId)}`) }

  removePin (requestId) { return this.upload(`/pins/${encodeURIComponent(requestId)}`, { method: 'DELETE' }) }

  /** The account's keys (never their secrets), oldest first. */
  listKeys () { return this.account('/api/keys') }

  /**
   * A new key: `{name, scopes, expiresIn?, maxUses?, origins?, maxUploadBytes?}`. The answer's
   * `key` is its secret, which no other answer carries.
   */
  createKey (request) { return this.account('/api/keys', { method: 'POST', json: request }) }

  revokeKey (id) { return this.account(`/api/keys/${encodeURIComponent(id)}`, { method: 'DELETE' }) }

  /**
   * A new upload link (upload host, scope `upload`): `{name?, expiresIn?, maxBytes?, uploads?,
   * mimeTypes?, keyvalues?, archiveMode?}`. Only this answer carries its `url` and
   * `tusEndpoint`, which hold its secret.
   */
  createLink (request) { return this.upload('/api/upload-links', { method: 'POST', json: request }) }

  /** The links this key may see (every one of the account's with `keys`), newest first. */
  listLinks () { return this.upload('/api/upload-links') }

  revokeLink (id) { return this.upload(`/api/upload-links/${encodeURIComponent(id)}`, { method: 'DELETE' }) }

  /** The account's webhook endpoints (scope `keys`), never their secrets. */
  listWebhooks () { return this.account('/api/webhooks') }

  /** A new endpoint: `{url, events, description?}`; the answer's `secret` is in it only. */
  createWebhook (request) { return this.account('/api/webhooks', { method: 'POST', json: request }) }

  deleteWebhook (id) { return this.account(`/api/webhooks/${encodeURIComponent(id)}`, { method: 'DELETE' }) }

  /** An endpoint's deliveries, newest first, with their attempts; `before` (a delivery id) pages back. */
  listDeliveries (id, { before = null, limit = 10 } = {}) {
    const query = new URLSearchParams({ limit: String(limit) })
    if (before !== null && before !== undefined) query.set('before', String(before))
    return this.account(`/api/webhooks/${encodeURIComponent(id)}/deliveries?${query}`)
  }

  /** Sends a delivery again now: the delivery as queued, with the attempts it had. */
  retryDelivery (id, delivery) {
    return this.account(`/api/webhooks/${encodeURIComponent(id)}/deliveries/${encodeURIComponent(delivery)}/retry`, { method: 'POST' })
  }

  /**
   * The account's event stream (Server-Sent Events, scope `read`), opened with the token in
   * the `Authorization` header rather than in the URL: read with fetch, it is not an
   * EventSource, so the token is in no URL a proxy might log. `lastEventId` resumes after
   * that event.
   */
  async accountEvents ({ lastEventId = null, signal } = {}) {
    const headers = this.authHeaders({ Accept: 'text/event-stream' })
    if (lastEventId) headers['Last-Event-ID'] = lastEventId
    let response
    try {
      response = await fetch('/api/events', { headers, signal, cache: 'no-store' })
    } catch (cause) {
      if (cause.name === 'AbortError') throw cause
      throw unreachable(location.href, cause)
    }
    if (!response.ok) throw await errorFrom(response)
    return response
  }

  /** The account's IPNS names: `{count, results: [{name, label, cid, value, sequence, ...}]}`. */
  listNames () { return this.upload('/api/names') }

  /** Points a name at `cid`: the name's record as it is now (its sequence one higher). */
  pointName (name, cid) {
    return this.upload(`/api/names/${encodeURIComponent(name)}`, { method: 'PUT', json: { cid } })
  }

  /** Where a name opens: the gateway's `/ipns/{name}/`, whatever it points at now. */
  nameLink (name) { return `${this.uploadUrl}/ipns/${name}/` }

  /** The ways to open a CID: path gateway, subdomain gateway (when deployed), ipfs://. */
  links (cid) {
    const links = { path: `${this.uploadUrl}/ipfs/${cid}`, subdomain: null, ipfs: `ipfs://${cid}` }
    const v1 = cidV1Base32(cid)
    if (this.config.subdomainGateway && v1) {
      links.subdomain = this.config.subdomainGateway.replace('{cid}', v1)
    }
    return links
  }
}

/** A CID (CIDv1 base32 `b...` or CIDv0 `Qm...`) or part of a name. */
export function looksLikeCid (text) {
  return /^(Qm[1-9A-HJ-NP-Za-km-z]{44}|b[a-z2-7]{50,})$/.test(text)
}

function addSearch (query, search) {
  const text = search.trim()
  if (!text) return
  if (looksLikeCid(text)) {
    query.set('cid', text)
  } else {
    query.set('name', text)
    query.set('match', 'ipartial')
  }
}

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567'

/**
 * The CIDv1 base32 form a subdomain gateway needs (DNS labels are case-insensitive): CIDv1
 * base32 stays as it is; CIDv0 (base58btc sha2-256 multihash, dag-pb) becomes
 * `b` + base32(0x01 0x70 multihash). `null` for anything else.
 */
export function cidV1Base32 (cid) {
  if (/^b[a-z2-7]+$/.test(cid)) return cid
  if (!/^Qm[1-9A-HJ-NP-Za-km-z]{44}$/.test(cid)) return null
  let bytes = [0]
  for (const char of cid) {
    let carry = BASE58.indexOf(char)
    for (let i = 0; i < bytes.length; i++) {
      carry += bytes[i] * 58
      bytes[i] = carry & 0xff
      carry >>= 8
    }
    while (carry > 0) {
      bytes.push(carry & 0xff)
      carry >>= 8
    }
  }
  bytes = bytes.reverse()
  while (bytes.length > 34 && bytes[0] === 0) bytes.shift()
  const input = [0x01, 0x70, ...bytes]
  let out = 'b'
  let buffer = 0
  let bits = 0
  for (const byte of input) {
    buffer = (buffer << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += BASE32[(buffer >> (bits - 5)) & 31]
      bits -= 5
    }
  }
  if (bits > 0) out += BASE32[(buffer << (5 - bits)) & 31]
  return out
}
