// A small TUS 1.0.0 client (https://tus.io/protocols/resumable-upload): creation with
// Upload-Length and Upload-Metadata, PATCH in chunks, HEAD to resume, DELETE to terminate; and
// the browser's memory of unfinished uploads (localStorage), so that after a reload the user
// picks the same file again and it resumes from the offset the server reports.

import { ApiError, errorFrom, unreachable } from './api.js'

const TUS_VERSION = '1.0.0'
/** Big enough that per-request overhead is small, small enough that a lost chunk costs little. */
export const CHUNK_BYTES = 8 * 1024 * 1024
/** Waits before retrying a chunk that failed on the network or a busy (423) upload. */
const RETRY_DELAYS_MS = [500, 1000, 3000, 5000, 10000]

/** Raised when pause() or cancel() stops a transfer; not a failure to show. */
export class Stopped extends Error {
  constructor () { super('stopped'); this.name = 'Stopped' }
}

/** `Upload-Metadata`: comma-separated `key base64(value)`, values UTF-8. */
export function encodeMetadata (pairs) {
  return Object.entries(pairs)
    .filter(([, value]) => value !== undefined && value !== null && value !== '')
    .map(([key, value]) => `${key} ${base64(String(value))}`)
    .join(',')
}

function base64 (text) {
  let binary = ''
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte)
  return btoa(binary)
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/**
 * One resumable upload of a Blob. `start()` creates it (or, given `url`, asks the server where
 * it stands) and sends the rest; it resolves when the last byte is acknowledged. `pause()`
 * stops after aborting the chunk in flight (the server keeps what it received); `cancel()`
 * also terminates it on the server.
 */
export class TusUpload {
  /**
   * @param {object} options
   * @param {string} options.endpoint   the creation URL (`{uploadUrl}/api/upload/tus`)
   * @param {string} options.token
   * @param {Blob} options.blob
   * @param {Record<string,string>} options.metadata
   * @param {string|null} [options.url]  an upload created before, to resume
   * @param {(sent: number, total: number) => void} [options.onProgress]
   * @param {(url: string, operationId: number|null, expiresAt: number|null) => void} [options.onCreated]
   */
  constructor ({ endpoint, token, blob, metadata, url = null, onProgress = () => {}, onCreated = () => {} }) {
    this.endpoint = endpoint
    this.token = token
    this.blob = blob
    this.metadata = metadata
    this.url = url
    this.operationId = null
    this.offset = 0
    this.onProgress = onProgress
    this.onCreated = onCreated
    this.xhr = null
    this.stopped = false
  }

  headers (extra = {}) {
    return { Authorization: `Bearer ${this.token}`, 'Tus-Resumable': TUS_VERSION, ...extra }
  }

  /**
   * Sends every byte not yet on the server. Resolves with `{resumedAt}`: the offset the server
   * already had when this run began (0 for a new upload).
   */
  async start () {
    this.stopped = false
    let resumedAt = 0
    if (this.url) {
      resumedAt = this.offset = await this.retrying(() => this.head())
    } else {
      await this.create()
    }
    this.onProgress(this.offset, this.blob.size)
    let failures = 0
    while (this.offset < this.blob.size) {
      if (this.stopped) throw new Stopped()
      try {
        this.offset = await this.patch(this.offset)
        failures = 0
      } catch (error) {
        if (this.stopped) throw new Stopped()
        // 409: our offset is not the server's (a chunk was half-received); ask and go on.
        // Network errors and 423/5xx are worth a few retries, from the server's offset.
        const retryable = error.status === 0 || error.status === 409 || error.status === 423 || error.status >= 500
        if (!retryable || failures >= RETRY_DELAYS_MS.length) throw error
        await sleep(RETRY_DELAYS_MS[failures++])
        if (this.stopped) throw new Stopped()
        this.offset = await this.retrying(() => this.head())
        this.onProgress(this.offset, this.blob.size)
      }
    }
    return { resumedAt }
  }

  /**
   * `request()`, tried again after a pause when the network failed, the upload was busy
   * (423: a chunk just aborted is still being let go of) or the server had a passing error.
   */
  async retrying (request) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await request()
      } catch (error) {
        if (this.stopped) throw new Stopped()
        const passing = error.status === 0 || error.status === 423 || error.status >= 500
        if (!passing || attempt >= RETRY_DELAYS_MS.length) throw error
        await sleep(RETRY_DELAYS_MS[attempt])
      }
    }
  }

  async create () {
    let response
    try {
      response = await fetch(this.endpoint, {
        method: 'POST',
        headers: this.headers({
          'Upload-Length': String(this.blob.size),
          'Upload-Metadata': encodeMetadata(this.metadata)
        })
      })
    } catch (cause) {
      throw unreachable(this.endpoint, cause)
    }
    if (response.status !== 201) throw await errorFrom(response)
    const location = response.headers.get('Location')
    if (!location) throw new ApiError(response.status, 'bad_response', 'The server did not say where the upload is (no Location header)')
    this.url = new URL(location, this.endpoint).href
    const operationId = response.headers.get('Cairn-Operation-Id')
    this.operationId = operationId ? Number(operationId) : null
    // After this the server may delete an unfinished upload (the expiration extension).
    const expires = Date.parse(response.headers.get('Upload-Expires') || '')
    this.expiresAt = Number.isNaN(expires) ? null : expires
    this.offset = 0
    this.onCreated(this.url, this.operationId, this.expiresAt)
  }

  /** The server's offset (HEAD); throws ApiError 404/410 when the upload is gone. */
  async head () {
    let response
    try {
      response = await fetch(this.url, { method: 'HEAD', headers: this.headers(), cache: 'no-store' })
    } catch (cause) {
      throw unreachable(this.url, cause)
    }
    if (!response.ok) {
      // A HEAD answer has no body to read the message from.
      const gone = response.status === 404 || response.status === 410
      throw new ApiError(response.status, gone ? 'gone' : 'http_' + response.status,
        gone ? 'The server no longer has this upload (finished, cancelled or expired)' : `The server answered ${response.status}`)
    }
    const offset = Number(response.headers.get('Upload-Offset'))
    if (!Number.isSafeInteger(offset)) throw new ApiError(response.status, 'bad_response', 'The server sent no Upload-Offset')
    return offset
  }

  /**
   * One chunk from `offset`, by XMLHttpRequest because fetch reports no upload progress.
   * Resolves with the new offset the server acknowledged.
   */
  patch (offset) {
    const chunk = this.blob.slice(offset, Math.min(offset + CHUNK_BYTES, this.blob.size))
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest()
      this.xhr = xhr
      xhr.open('PATCH', this.url)
      for (const [name, value] of Object.entries(this.headers({
        'Upload-Offset': String(offset),
        'Content-Type': 'application/offset+octet-stream'
      }))) xhr.setRequestHeader(name, value)
      xhr.upload.onprogress = event => this.onProgress(offset + event.loaded, this.blob.size)
      xhr.onload = async () => {
        this.xhr = null
        if (xhr.status === 204) {
          const next = Number(xhr.getResponseHeader('Upload-Offset'))
          if (Number.isSafeInteger(next) && next > offset) {
            this.onProgress(next, this.blob.size)
            resolve(next)
          } else {
            reject(new ApiError(xhr.status, 'bad_response', 'The server acknowledged no bytes'))
          }
        } else {
          reject(await errorFrom(new Response(xhr.response, { status: xhr.status, statusText: xhr.statusText })))
        }
      }
      xhr.onerror = () => { this.xhr = null; reject(unreachable(this.url, null)) }
      xhr.onabort = () => { this.xhr = null; reject(new Stopped()) }
      xhr.responseType = 'blob'
      xhr.send(chunk)
    })
  }

  /** Stops sending; what the server acknowledged stays there, to resume. */
  pause () {
    this.stopped = true
    this.xhr?.abort()
  }

  /**
   * Stops sending and deletes the upload on the server (TUS termination). Called again, it
   * waits for the same deletion; called before the upload exists, it has nothing to delete.
   */
  cancel () {
    this.pause()
    if (!this.url) return Promise.resolve()
    this.terminating ??= this.terminate()
    return this.terminating
  }

  async terminate () {
    // Not `this.retrying`: the upload is stopped on purpose here.
    for (let attempt = 0; ; attempt++) {
      let response
      try {
        response = await fetch(this.url, { method: 'DELETE', headers: this.headers() })
      } catch (cause) {
        throw unreachable(this.url, cause)
      }
      // 404/410: already gone, which is what was asked.
      if (response.ok || response.status === 404 || response.status === 410) return
      // 423: the server is still letting go of the chunk just aborted; it will in a moment.
      if (response.status !== 423 || attempt >= RETRY_DELAYS_MS.length) throw await errorFrom(response)
      await sleep(RETRY_DELAYS_MS[attempt])
    }
  }

  /**
   * The "finish" step of the upload workflow: DELETE on a complete upload tells the server the
   * client is done, so it releases the upload's bytes once processing ends. Best effort.
   */
  async finish () {
    try {
      await fetch(this.url, { method: 'DELETE', headers: this.headers() })
    } catch {
      // The server releases them on expiry anyway.
    }
  }
}

/**
 * Unfinished uploads this browser remembers, by fingerprint (what identifies the same bytes
 * picked again: name, size, modification time, archive mode). Kept in localStorage so a
 * reload or a crash does not lose them; removed when the upload ends either way.
 */
export class ResumeStore {
  constructor (key = 'cairn.tus-uploads') {
    this.key = key
  }

  /** Every remembered upload, less those the server has deleted by now (expired). */
  all () {
    let value
    try {
      value = JSON.parse(localStorage.getItem(this.key) || '{}')
    } catch {
      value = null
    }
    if (!value || typeof value !== 'object') return {}
    const now = Date.now()
    const live = Object.entries(value).filter(([, entry]) => !(entry.expiresAt && entry.expiresAt < now))
    if (live.length !== Object.keys(value).length) this.save(Object.fromEntries(live))
    return Object.fromEntries(live)
  }

  get (fingerprint) { return this.all()[fingerprint] || null }

  /** @param {{url: string, operationId: number|null, expiresAt: number|null, name: string, size: number, mode: string}} entry */
  put (fingerprint, entry) {
    const all = this.all()
    all[fingerprint] = { ...entry, savedAt: Date.now() }
    this.save(all)
  }

  update (fingerprint, changes) {
    const all = this.all()
    if (!all[fingerprint]) return
    all[fingerprint] = { ...all[fingerprint], ...changes }
    this.save(all)
  }

  remove (fingerprint) {
    const all = this.all()
    delete all[fingerprint]
    this.save(all)
  }

  save (all) {
    try {
      localStorage.setItem(this.key, JSON.stringify(all))
    } catch {
      // Storage full or disabled: uploads still work, they just cannot resume after a reload.
    }
  }
}
