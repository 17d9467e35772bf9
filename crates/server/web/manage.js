// What the account keeps: the quota (GET /api/upload-limit) and this month's usage
// (GET /api/usage), its uploads (GET /api/uploads, paged by cursor, deleted with
// DELETE /api/uploads/{id}) and its pins (the Pinning Service API at /pins on the upload host:
// listed paged by `before`, added, watched, removed). One search box filters both lists, by
// CID or by part of a name.

import { copyText, el, formatBytes, formatNumber, formatTime, keepFocusIn } from './ui.js'

const PAGE = 10
/** How often a new pin's status is asked for until it is pinned or failed. */
const PIN_POLL_MS = 1000

export class Library {
  /**
   * @param {object} options
   * @param {() => import('./api.js').Api} options.api
   * @param {(text: string) => void} options.announce
   * @param {(question: {title: string, text: string, action: string}) => Promise<boolean>} options.confirm
   */
  constructor ({ api, announce, confirm }) {
    this.api = api
    this.announce = announce
    this.confirm = confirm
    this.search = ''
    this.uploadCursors = [null]
    this.pinBefores = [null]
    this.nextUploadCursor = null
    this.nextPinBefore = null
    this.pinWatch = null
    this.ids = 0
    const $ = id => document.getElementById(id)
    this.elements = {
      quotaText: $('quota-text'),
      quotaBar: $('quota-bar'),
      limitText: $('limit-text'),
      usagePeriod: $('usage-period'),
      usageNote: $('usage-note'),
      usageFacts: $('usage-facts'),
      uploads: $('uploads-list'),
      uploadsNote: $('uploads-note'),
      uploadsPrev: $('uploads-prev'),
      uploadsNext: $('uploads-next'),
      pins: $('pins-list'),
      pinsNote: $('pins-note'),
      pinsPrev: $('pins-prev'),
      pinsNext: $('pins-next'),
      pinForm: $('pin-form'),
      pinCid: $('pin-cid'),
      pinName: $('pin-name'),
      pinStatus: $('pin-status'),
      searchForm: $('search-form'),
      search: $('search'),
      searchClear: $('search-clear')
    }
    this.wire()
  }

  wire () {
    const e = this.elements
    e.searchForm.addEventListener('submit', event => {
      event.preventDefault()
      this.setSearch(e.search.value)
    })
    e.searchClear.addEventListener('click', () => {
      e.search.value = ''
      this.setSearch('')
      e.search.focus()
    })
    e.uploadsNext.addEventListener('click', () => {
      this.uploadCursors.push(this.nextUploadCursor)
      this.refreshUploads()
    })
    e.uploadsPrev.addEventListener('click', () => {
      if (this.uploadCursors.length > 1) this.uploadCursors.pop()
      this.refreshUploads()
    })
    e.pinsNext.addEventListener('click', () => {
      this.pinBefores.push(this.nextPinBefore)
      this.refreshPins()
    })
    e.pinsPrev.addEventListener('click', () => {
      if (this.pinBefores.length > 1) this.pinBefores.pop()
      this.refreshPins()
    })
    e.pinForm.addEventListener('submit', event => {
      event.preventDefault()
      this.pin(e.pinCid.value.trim(), e.pinName.value.trim())
    })
  }

  setSearch (text) {
    this.search = text.trim()
    this.uploadCursors = [null]
    this.pinBefores = [null]
    this.refreshUploads()
    this.refreshPins()
  }

  refreshAll () {
    return Promise.all([this.refreshQuota(), this.refreshUploads(), this.refreshPins()])
  }

  /**
   * The quota and, beside it, this month's usage.
   * @param {{limit: number, storedBytes: number, quota: number|null}} [known]
   */
  refreshQuota (known) {
    return Promise.all([this.showQuota(known), this.refreshUsage()])
  }

  async showQuota (known) {
    const e = this.elements
    let limits = known
    try {
      limits ??= await this.api().uploadLimit()
    } catch (error) {
      e.quotaText.textContent = `Could not read the quota: ${error.message}`
      return
    }
    const used = limits.storedBytes ?? 0
    if (limits.quota === null || limits.quota === undefined) {
      e.quotaText.textContent = `${formatBytes(used)} stored. Storage is unlimited.`
      e.quotaBar.hidden = true
    } else {
      const percent = limits.quota > 0 ? Math.min(100, (used / limits.quota) * 100) : 100
      e.quotaText.textContent = `${formatBytes(used)} of ${formatBytes(limits.quota)} used (${percent.toFixed(percent < 10 ? 1 : 0)}%).`
      e.quotaBar.hidden = false
      e.quotaBar.max = Math.max(limits.quota, 1)
      e.quotaBar.value = Math.min(used, limits.quota)
      e.quotaBar.classList.toggle('nearly-full', percent >= 90)
    }
    e.limitText.textContent = `Files up to ${formatBytes(limits.limit)} are sent in one request; ` +
      'larger ones in resumable chunks that survive a lost connection or a reload.'
  }

  /**
   * What the account keeps now (uploads, pins by CID) and what was uploaded and served this
   * month (scope `read`).
   */
  async refreshUsage () {
    const e = this.elements
    let usage
    try {
      usage = await this.api().usage()
    } catch (error) {
      // A key without the `read` scope: say so, and leave the rest of the page alone.
      e.usageNote.textContent = error.status === 403
        ? `This key cannot read the account's usage: ${error.message}`
        : `Could not read this month's usage: ${error.message}`
      e.usageNote.hidden = false
      e.usageFacts.hidden = true
      e.usagePeriod.textContent = ''
      return
    }
    e.usagePeriod.textContent = `${formatDay(usage.period.start)} to ${formatDay(usage.period.end, -1)} (UTC)`
    const facts = [
      ['Uploaded this month', formatBytes(usage.uploadedBytes)],
      ['Served this month', formatBytes(usage.servedBytes)],
      ['Uploads kept', formatNumber(usage.uploads)],
      ['Pins by CID', formatNumber(usage.pins)]
    ]
    e.usageFacts.replaceChildren(...facts.flatMap(([term, value]) => [el('dt', {}, term), el('dd', {}, value)]))
    e.usageFacts.hidden = false
    e.usageNote.hidden = true
  }

  async refreshUploads () {
    const e = this.elements
    const cursor = this.uploadCursors.at(-1)
    let page
    try {
      page = await this.api().listUploads({ search: this.search, cursor, limit: PAGE })
    } catch (error) {
      e.uploadsNote.textContent = `Could not list uploads: ${error.message}`
      e.uploadsNote.hidden = false
      return
    }
    // Deleting the last row of a later page leaves it empty: show the page before.
    if (page.uploads.length === 0 && this.uploadCursors.length > 1) {
      this.uploadCursors.pop()
      return this.refreshUploads()
    }
    this.nextUploadCursor = page.nextCursor
    e.uploads.replaceChildren(...page.uploads.map(upload => this.uploadRow(upload)))
    e.uploadsNote.hidden = page.uploads.length > 0
    e.uploadsNote.textContent = this.search ? `No upload matches “${this.search}”.` : 'No uploads yet.'
    e.uploadsPrev.disabled = this.uploadCursors.length <= 1
    e.uploadsNext.disabled = !page.nextCursor
  }

  uploadRow (upload) {
    const titleId = `upload-${++this.ids}`
    const status = upload.status === 'completed' && upload.pinned === false ? 'deleted' : upload.status
    return el('li', { class: 'record', 'aria-labelledby': titleId },
      el('div', { class: 'record-head' },
        el('h4', { id: titleId }, upload.name || '(no name)'),
        el('span', { class: `badge badge-${status}` }, status)),
      el('p', { class: 'record-meta' },
        `${formatBytes(upload.size)} · ${formatTime(upload.createdAt)} · `,
        el('span', { class: 'mono' }, `id ${upload.id}`)),
      upload.cid
        ? el('p', { class: 'mono cid-text' }, upload.cid)
        : el('p', { class: 'muted' }, upload.status === 'failed' ? `Nothing stored: ${upload.error?.message || 'the upload failed.'}` : 'CID not known yet.'),
      el('div', { class: 'record-actions' },
        upload.cid && this.copyButton(upload.cid, titleId),
        upload.cid && el('a', { href: this.api().links(upload.cid).path, target: '_blank', rel: 'noopener', 'aria-describedby': titleId }, 'Open'),
        this.button('Delete', titleId, 'danger', () => this.deleteUpload(upload))))
  }

  async deleteUpload (upload) {
    const yes = await this.confirm({
      title: `Delete “${upload.name || upload.id}”?`,
      text: 'The upload is removed from your account and no longer counts against your quota. ' +
        'Its content stays reachable only while another upload or pin keeps it.',
      action: 'Delete'
    })
    if (!yes) return
    try {
      await this.api().deleteUpload(upload.id)
      this.announce(`Deleted ${upload.name || upload.id}`)
    } catch (error) {
      this.announce(`Could not delete ${upload.name || upload.id}: ${error.message}`)
    }
    await this.refreshAll()
    keepFocusIn('uploads-title')
  }

  async refreshPins () {
    const e = this.elements
    const before = this.pinBefores.at(-1)
    let page
    try {
      page = await this.api().listPins({ search: this.search, before, limit: PAGE })
    } catch (error) {
      e.pinsNote.textContent = `Could not list pins: ${error.message}`
      e.pinsNote.hidden = false
      return
    }
    if (page.results.length === 0 && this.pinBefores.length > 1) {
      this.pinBefores.pop()
      return this.refreshPins()
    }
    // The next page holds what was created before the last pin shown.
    this.nextPinBefore = page.results.at(-1)?.created ?? null
    const shownBefore = (this.pinBefores.length - 1) * PAGE
    e.pins.replaceChildren(...page.results.map(pin => this.pinRow(pin)))
    e.pinsNote.hidden = page.results.length > 0
    e.pinsNote.textContent = this.search ? `No pin matches “${this.search}”.` : 'Nothing pinned yet.'
    e.pinsPrev.disabled = this.pinBefores.length <= 1
    e.pinsNext.disabled = shownBefore + page.results.length >= page.count || page.results.length < PAGE
  }

  pinRow (pin) {
    const titleId = `pin-${++this.ids}`
    const reason = pin.info?.reason
    return el('li', { class: 'record', 'aria-labelledby': titleId },
      el('div', { class: 'record-head' },
        el('h4', { id: titleId }, pin.pin.name || '(no name)'),
        el('span', { class: `badge badge-${pin.status}` }, pin.status)),
      el('p', { class: 'record-meta' }, `Added ${formatTime(pin.created)}`),
      el('p', { class: 'mono cid-text' }, pin.pin.cid),
      reason && el('p', { class: 'error' }, reason),
      el('div', { class: 'record-actions' },
        this.copyButton(pin.pin.cid, titleId),
        el('a', { href: this.api().links(pin.pin.cid).path, target: '_blank', rel: 'noopener', 'aria-describedby': titleId }, 'Open'),
        this.button('Remove pin', titleId, 'danger', () => this.removePin(pin))))
  }

  async pin (cid, name) {
    const e = this.elements
    if (!cid) return
    clearTimeout(this.pinWatch)
    e.pinStatus.classList.remove('error')
    e.pinStatus.textContent = `Asking the server to pin ${cid}…`
    let status
    try {
      status = await this.api().addPin(cid, name)
    } catch (error) {
      e.pinStatus.textContent = `Could not pin: ${error.message}`
      e.pinStatus.classList.add('error')
      return
    }
    e.pinCid.value = ''
    e.pinName.value = ''
    this.showPinStatus(status)
    await this.refreshAll()
  }

  /** Shows a pin's status, asking again until it is settled. */
  showPinStatus (status) {
    const e = this.elements
    const label = status.pin.name ? `“${status.pin.name}”` : status.pin.cid
    const settled = status.status === 'pinned' || status.status === 'failed'
    const reason = status.info?.reason ? `: ${status.info.reason}` : ''
    e.pinStatus.textContent = `Pin ${label}: ${status.status}${reason}${settled ? '.' : '…'}`
    e.pinStatus.classList.toggle('error', status.status === 'failed')
    if (settled) return
    this.pinWatch = setTimeout(async () => {
      try {
        const next = await this.api().pinStatus(status.requestid)
        if (next.status !== status.status) this.refreshPins()
        this.showPinStatus(next)
      } catch (error) {
        e.pinStatus.textContent = `Pin ${label}: could not ask for its status: ${error.message}`
      }
    }, PIN_POLL_MS)
  }

  async removePin (pin) {
    const yes = await this.confirm({
      title: `Remove the pin “${pin.pin.name || pin.pin.cid}”?`,
      text: 'The service stops keeping this CID for you. If the pin is one of your uploads, the upload is deleted too.',
      action: 'Remove pin'
    })
    if (!yes) return
    try {
      await this.api().removePin(pin.requestid)
      this.announce(`Removed the pin ${pin.pin.name || pin.pin.cid}`)
    } catch (error) {
      this.announce(`Could not remove the pin: ${error.message}`)
    }
    await this.refreshAll()
    keepFocusIn('pins-title')
  }

  copyButton (cid, describedBy) {
    return this.button('Copy CID', describedBy, '', async () => {
      const copied = await copyText(cid)
      this.announce(copied ? 'CID copied' : 'Could not copy: select the CID and copy it')
    })
  }

  button (text, describedBy, className, onClick) {
    const button = el('button', { type: 'button', class: className || null, 'aria-describedby': describedBy }, text)
    button.addEventListener('click', onClick)
    return button
  }
}

/** The UTC day of an RFC 3339 time, `offsetMs` later (the day before an exclusive end: -1). */
function formatDay (rfc3339, offsetMs = 0) {
  const date = new Date(Date.parse(rfc3339) + offsetMs)
  if (Number.isNaN(date.getTime())) return rfc3339 || ''
  return date.toLocaleDateString(undefined, { dateStyle: 'medium', timeZone: 'UTC' })
}
