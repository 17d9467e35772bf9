// The transfers of this page: each picked or dropped item becomes a Transfer (a list item
// with its progress, controls and result), sent by one POST when it fits the account's limit
// and over TUS otherwise, then followed through its operation's event stream (or by polling
// the operation where the stream cannot be kept) until the server has its CID.
// A Queue runs a few at once.

import { ApiError } from './api.js'
import { ResumeStore, Stopped, TusUpload } from './tus.js'
import { buildTar } from './tar.js'
import { folderBytes } from './files.js'
import { copyText, formatBytes, formatNumber } from './ui.js'

/** Transfers running at once: enough to keep the line busy, few enough to finish some early. */
const CONCURRENCY = 3
/** How often an operation is asked about while the server processes it, without its stream. */
const POLL_MS = 500
/** An operation's stream that fails this often in a row is given up for polling. */
const STREAM_ERRORS = 3
/** How long a stream may stay silent after it opens (or fails) before polling takes over. */
const STREAM_SILENCE_MS = 20_000
/** What the status says at each stage of a `progress` event. */
const STAGES = {
  receiving: 'The server is receiving it…',
  queued: 'Queued: waiting for the server to start on it…',
  extracting: 'Extracting the archive…',
  importing: 'Importing…',
  storing: 'Storing…'
}
/** How far back the speed is measured. */
const SPEED_WINDOW_MS = 3000

export const resumeStore = new ResumeStore()

/** Runs transfers, at most CONCURRENCY at a time, in the order they were added. */
export class Queue {
  /**
   * @param {object} options
   * @param {() => import('./api.js').Api} options.api
   * @param {() => number} options.limit   the account's largest single POST, in bytes
   * @param {HTMLElement} options.list     where the transfers are shown
   * @param {HTMLTemplateElement} options.template
   * @param {(text: string) => void} options.announce
   * @param {() => void} options.onStored  after an upload is stored (to refresh lists, quota)
   * @param {() => void} options.onSettled  after a transfer stops, however it ended
   */
  constructor (options) {
    Object.assign(this, options)
    this.waiting = []
    this.running = new Set()
    this.transfers = []
    this.nextId = 1
  }

  /** Fingerprints of this page's transfers that are not over, which need no resuming by hand. */
  activeFingerprints () {
    return new Set(this.transfers
      .filter(t => ['queued', 'sending', 'paused', 'processing'].includes(t.state))
      .map(t => t.fingerprint))
  }

  /** A plain file (or archive), stored as `mode` says. */
  addFile (file, mode) {
    this.add(new Transfer(this, {
      name: file.name,
      blob: file,
      fileName: file.name,
      mimeType: file.type,
      // Only a non-default mode is sent: an explicit `extract` makes the server refuse a file
      // that is not an archive, and this switch is about archives only.
      archiveMode: mode === 'preserve' ? 'preserve' : null,
      fingerprint: `file:${file.name}:${file.size}:${file.lastModified}:${mode}`,
      description: formatBytes(file.size)
    }))
  }

  /** A folder, sent as a tar of its contents and always extracted into one directory. */
  addFolder (folder) {
    const blob = buildTar(folder.entries)
    const files = folder.entries.filter(e => e.file)
    const newest = files.reduce((max, e) => Math.max(max, e.file.lastModified), 0)
    this.add(new Transfer(this, {
      name: folder.name,
      blob,
      fileName: `${folder.name}.tar`,
      mimeType: 'application/x-tar',
      archiveMode: 'extract',
      // The tar is built the same way from the same files: its size and the newest file
      // identify it well enough to resume.
      fingerprint: `folder:${folder.name}:${blob.size}:${files.length}:${newest}`,
      description: `folder, ${formatNumber(files.length)} ${files.length === 1 ? 'file' : 'files'}, ` +
        `${formatNumber(folder.entries.length - files.length)} ${folder.entries.length - files.length === 1 ? 'folder' : 'folders'}, ${formatBytes(folderBytes(folder.entries))}`
    }))
  }

  add (transfer) {
    this.transfers.push(transfer)
    this.list.prepend(transfer.element)
    this.waiting.push(transfer)
    this.pump()
  }

  /** Puts a paused transfer back in line, ahead of those that never started. */
  requeue (transfer) {
    this.waiting.unshift(transfer)
    this.pump()
  }

  forget (transfer) {
    this.waiting = this.waiting.filter(t => t !== transfer)
  }

  pump () {
    while (this.running.size < CONCURRENCY && this.waiting.length > 0) {
      const transfer = this.waiting.shift()
      this.running.add(transfer)
      transfer.run().finally(() => {
        this.running.delete(transfer)
        this.pump()
        this.onSettled()
      })
    }
  }
}

/** One item: its transfer, its operation, and how both look on the page. */
class Transfer {
  constructor (queue, { name, blob, fileName, mimeType, archiveMode, fingerprint, description }) {
    this.queue = queue
    this.name = name
    this.blob = blob
    this.fileName = fileName
    this.mimeType = mimeType || 'application/octet-stream'
    this.archiveMode = archiveMode
    this.fingerprint = fingerprint
    this.state = 'queued'
    this.tus = null
    this.xhr = null
    this.samples = []
    this.pollAbort = null
    this.render(description, queue.nextId++)
    this.setStatus('Waiting for a free slot…')
  }

  render (description, id) {
    const element = this.queue.template.content.firstElementChild.cloneNode(true)
    const $ = selector => element.querySelector(selector)
    const titleId = `transfer-${id}-name`
    element.setAttribute('aria-labelledby', titleId)
    $('.transfer-name').id = titleId
    $('.transfer-name').textContent = this.name
    $('.transfer-description').textContent = description
    for (const control of element.querySelectorAll('button, progress')) control.setAttribute('aria-describedby', titleId)
    this.element = element
    this.progress = $('progress')
    this.progress.max = Math.max(this.blob.size, 1)
    this.progress.value = 0
    this.bytes = $('.transfer-bytes')
    this.status = $('.transfer-status')
    this.buttons = {
      pause: $('.pause'), resume: $('.resume'), cancel: $('.cancel'), dismiss: $('.dismiss')
    }
    this.buttons.pause.addEventListener('click', () => this.pause())
    this.buttons.resume.addEventListener('click', () => this.resume())
    this.buttons.cancel.addEventListener('click', () => this.cancel())
    this.buttons.dismiss.addEventListener('click', () => this.element.remove())
    this.result = $('.transfer-result')
    $('.copy').addEventListener('click', async () => {
      const copied = await copyText(this.cid)
      this.queue.announce(copied ? `CID of ${this.name} copied` : 'Could not copy: select the CID and copy it')
    })
    this.showProgress(0)
    this.updateButtons()
  }

  /** Shows which buttons make sense in this state. */
  updateButtons () {
    const { pause, resume, cancel, dismiss } = this.buttons
    const resumable = this.tus !== null
    pause.hidden = !(this.state === 'sending' && resumable)
    resume.hidden = this.state !== 'paused'
    cancel.hidden = !['queued', 'sending', 'paused'].includes(this.state)
    dismiss.hidden = !['done', 'failed', 'cancelled'].includes(this.state)
  }

  setState (state) {
    this.state = state
    this.element.dataset.state = state
    this.updateButtons()
  }

  setStatus (text, isError = false) {
    this.status.textContent = text
    this.status.classList.toggle('error', isError)
  }

  showProgress (sent) {
    const total = this.blob.size
    this.progress.value = sent
    const now = performance.now()
    this.samples.push([now, sent])
    while (this.samples.length > 2 && now - this.samples[0][0] > SPEED_WINDOW_MS) this.samples.shift()
    const [t0, b0] = this.samples[0]
    const speed = now - t0 > 250 ? (sent - b0) / ((now - t0) / 1000) : null
    const percent = total === 0 ? 100 : Math.floor((sent / total) * 100)
    let text = `${formatBytes(sent)} of ${formatBytes(total)} (${percent}%)`
    if (speed !== null && this.state === 'sending' && sent < total) text += `, ${formatBytes(Math.max(speed, 0))}/s`
    this.bytes.textContent = text
  }

  /** Sends the item; resolves when the transfer stops (done, paused, failed or cancelled). */
  async run () {
    if (this.state === 'cancelled') return
    this.setState('sending')
    this.samples = []
    const remembered = resumeStore.get(this.fingerprint)
    const overLimit = this.blob.size > this.queue.limit()
    try {
      const useTus = remembered || overLimit || this.tus
      let stored = useTus ? await this.sendTus(remembered) : await this.sendPost().catch(error => {
        // The account's limit went down since sign-in: the resumable way takes any size.
        if (error.status === 413) return null
        throw error
      })
      stored ??= await this.sendTus(null)
      await this.watch(stored)
    } catch (error) {
      if (error instanceof Stopped) {
        // Cancelled while the upload was being created: terminate what the server made
        // (cancel() deletes an upload once, however often it is called).
        if (this.state === 'cancelled' && this.tus?.url) {
          await this.tus.cancel().catch(() => {})
          resumeStore.remove(this.fingerprint)
        }
        return
      }
      if (this.state !== 'cancelled') this.fail(error)
    }
  }

  /** One multipart POST, by XMLHttpRequest for its upload progress. */
  sendPost () {
    this.setStatus('Uploading…')
    const query = new URLSearchParams({ name: this.name })
    if (this.archiveMode) query.set('archive_mode', this.archiveMode)
    const body = new FormData()
    body.append('file', this.blob, this.fileName)
    const api = this.queue.api()
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest()
      this.xhr = xhr
      xhr.open('POST', `${api.uploadUrl}/api/upload?${query}`)
      xhr.setRequestHeader('Authorization', `Bearer ${api.token}`)
      xhr.responseType = 'json'
      xhr.upload.onprogress = event => this.showProgress(Math.min(event.loaded, this.blob.size))
      xhr.onload = () => {
        this.xhr = null
        const body = xhr.response
        if (xhr.status === 200 && body) {
          this.showProgress(this.blob.size)
          resolve({ operationId: body.operationId, cid: body.cid, status: body.status })
        } else {
          const error = body?.error
          reject(new ApiError(xhr.status, typeof error === 'string' ? error : 'http_' + xhr.status,
            body?.message || `The server answered ${xhr.status}`))
        }
      }
      xhr.onerror = () => { this.xhr = null; reject(new ApiError(0, 'unreachable', `Cannot reach ${api.uploadUrl}`)) }
      xhr.onabort = () => { this.xhr = null; reject(new Stopped()) }
      xhr.send(body)
    })
  }

  /** TUS: create (or resume a remembered upload), send every chunk, then finish. */
  async sendTus (remembered) {
    const api = this.queue.api()
    if (!this.tus) {
      this.tus = new TusUpload({
        endpoint: `${api.uploadUrl}/api/upload/tus`,
        token: api.token,
        blob: this.blob,
        url: remembered?.url || null,
        metadata: { filename: this.name, filetype: this.mimeType, archive_mode: this.archiveMode },
        onProgress: sent => this.showProgress(sent),
        onCreated: (url, operationId, expiresAt) => resumeStore.put(this.fingerprint, {
          url, operationId, expiresAt, name: this.name, size: this.blob.size, mode: this.archiveMode || 'extract'
        })
      })
      this.tus.operationId = remembered?.operationId ?? null
    }
    this.updateButtons()
    const resuming = this.tus.url !== null
    this.setStatus(resuming ? 'Asking the server where this upload stopped…' : 'Uploading in resumable chunks…')
    let resumedAt
    try {
      ({ resumedAt } = await this.tus.start())
    } catch (error) {
      // The remembered upload is gone (expired, cancelled elsewhere): start it afresh.
      if (resuming && (error.status === 404 || error.status === 410) && this.tus.offset === 0) {
        resumeStore.remove(this.fingerprint)
        this.tus.url = null
        this.tus.operationId = null
        return this.sendTus(null)
      }
      throw error
    }
    if (resuming) {
      this.resumedAt = resumedAt
      this.element.querySelector('.transfer-resumed').textContent =
        `Resumed at ${formatBytes(resumedAt)} (${resumedAt} bytes were already on the server).`
    }
    resumeStore.remove(this.fingerprint)
    this.tus.finish()
    const uploadId = this.tus.url.split('/').pop()
    return { operationId: this.tus.operationId ?? uploadId, cid: null, status: 'pending' }
  }

  /**
   * Follows the operation until it completes or fails (an archive is extracted meanwhile): by
   * its event stream, or by asking about it where the stream cannot be kept.
   */
  async watch ({ operationId, cid, status }) {
    this.setState('processing')
    this.showProgress(this.blob.size)
    if (cid && status === 'completed') return this.done(cid)
    this.setStatus('Stored; the server is processing it…')
    const api = this.queue.api()
    this.pollAbort = new AbortController()
    const completed = await this.follow(api, operationId, this.pollAbort.signal)
    if (completed) return this.done(completed.cid)
    if (!this.pollAbort.signal.aborted) await this.poll(api, operationId)
  }

  /**
   * The operation's event stream: each `progress` shown as it comes, then the record once
   * `completed` (a `failed` rejects with its error). EventSource reconnects by itself, going on
   * after the last event it got. Resolves null when the stream cannot be kept, for polling to
   * take over: it was closed for good (refused, or not a stream), it failed STREAM_ERRORS
   * times without an event between, or STREAM_SILENCE_MS passed without an event since it
   * opened or since it last failed (a proxy that buffers streams, or cuts them).
   */
  follow (api, operationId, signal) {
    return new Promise((resolve, reject) => {
      const source = new EventSource(api.operationEventsUrl(operationId))
      let errors = 0
      let silence = null
      const wait = () => { silence ??= setTimeout(() => end(resolve, null), STREAM_SILENCE_MS) }
      const end = (settle, value) => {
        source.close()
        clearTimeout(silence)
        signal.removeEventListener('abort', onAbort)
        settle(value)
      }
      const onAbort = () => end(resolve, null)
      signal.addEventListener('abort', onAbort)
      const on = (type, handle) => source.addEventListener(type, event => {
        errors = 0
        clearTimeout(silence)
        silence = null
        let data
        try {
          data = JSON.parse(event.data)
        } catch {
          return end(resolve, null)
        }
        handle(data)
      })
      on('progress', progress => this.showStage(progress))
      // The server ends the stream after its final event: closed here, or EventSource would
      // reconnect.
      on('completed', record => end(resolve, record.cid ? record : null))
      on('failed', error => end(reject, new ApiError(422, error.error || 'failed',
        error.message || 'The server could not process this upload')))
      source.addEventListener('error', () => {
        if (source.readyState === EventSource.CLOSED || ++errors >= STREAM_ERRORS) return end(resolve, null)
        wait()
      })
      wait()
    })
  }

  /** Where the server is with the upload, from a `progress` event. */
  showStage ({ stage, bytes, totalBytes }) {
    const status = STAGES[stage] || 'Processing…'
    if (this.status.textContent !== status) this.setStatus(status)
    // The bytes go beside the bar, where they are seen without being read out at every event.
    let text = `${formatBytes(this.blob.size)} sent`
    if (Number.isFinite(bytes) && Number.isFinite(totalBytes) && totalBytes > 0) {
      text += `; ${stage} ${formatBytes(bytes)} of ${formatBytes(totalBytes)} (${Math.floor((bytes / totalBytes) * 100)}%)`
    } else if (Number.isFinite(bytes)) {
      text += `; ${stage} ${formatBytes(bytes)}`
    }
    this.bytes.textContent = text
  }

  /** Asks about the operation every POLL_MS until it completes or fails. */
  async poll (api, operationId) {
    for (;;) {
      let op
      try {
        op = await api.operation(operationId, this.pollAbort.signal)
      } catch (error) {
        if (error.name === 'AbortError') return
        // A missed poll is no failure: the server may be busy or restarting.
        if (error.status === 0 || error.status === 429 || error.status >= 500) {
          await sleep(POLL_MS * 4)
          continue
        }
        throw error
      }
      if (op.status === 'completed' && op.cid) return this.done(op.cid)
      if (op.status === 'failed') {
        throw new ApiError(422, op.error?.error || 'failed', op.error?.message || op.statusMessage || 'The server could not process this upload')
      }
      // The status (a live region) changes with the server's message; the percentage goes
      // beside the bytes, where it is seen without being read out at every poll.
      const what = op.status === 'pending' ? 'Waiting for the server' : 'Processing'
      // The server's messages may repeat the status ("processing: 1 of 2 bytes read").
      const message = (op.statusMessage || '').replace(new RegExp(`^${op.status}:?\\s*`, 'i'), '')
      const detail = message ? `: ${message}` : '…'
      const status = what + detail
      if (this.status.textContent !== status) this.setStatus(status)
      if (Number.isFinite(op.progressPercent)) {
        this.bytes.textContent = `${formatBytes(this.blob.size)} sent; processed ${Math.floor(op.progressPercent)}%`
      }
      await sleep(POLL_MS)
    }
  }

  done (cid) {
    this.setState('done')
    this.showProgress(this.blob.size)
    this.cid = cid
    this.setStatus('Stored.')
    const links = this.queue.api().links(cid)
    const $ = selector => this.result.querySelector(selector)
    $('.cid').value = cid
    setLink($('.path-link'), links.path)
    setLink($('.subdomain-link'), links.subdomain)
    setLink($('.ipfs-link'), links.ipfs)
    this.result.hidden = false
    this.queue.announce(`${this.name} uploaded. CID ${cid}`)
    this.queue.onStored()
  }

  fail (error) {
    this.setState('failed')
    this.setStatus(`Failed: ${error.message}`, true)
    this.queue.announce(`${this.name} failed: ${error.message}`)
  }

  pause () {
    if (this.state !== 'sending' || !this.tus) return
    this.setState('paused')
    this.tus.pause()
    this.showProgress(this.progress.value) // the same bytes, without a speed
    this.setStatus('Paused. The server keeps what it received.')
    this.queue.announce(`${this.name} paused`)
  }

  resume () {
    if (this.state !== 'paused') return
    this.setState('queued')
    this.setStatus('Resuming…')
    this.queue.requeue(this)
  }

  async cancel () {
    const was = this.state
    this.setState('cancelled')
    this.queue.forget(this)
    this.pollAbort?.abort()
    this.xhr?.abort()
    this.setStatus('Cancelling…')
    try {
      if (this.tus) await this.tus.cancel()
      resumeStore.remove(this.fingerprint)
      this.setStatus(was === 'queued' ? 'Cancelled before it started.' : 'Cancelled. Nothing was kept.')
    } catch (error) {
      this.setStatus(`Cancelled here, but the server did not confirm: ${error.message}`, true)
    }
    this.queue.announce(`${this.name} cancelled`)
  }
}

function setLink (anchor, href) {
  anchor.parentElement.hidden = !href
  if (href) {
    anchor.href = href
    anchor.parentElement.querySelector('.link-target').textContent = href
  }
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))
