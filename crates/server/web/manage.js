// What the account keeps: the quota (GET /api/upload-limit) and this month's usage
// (GET /api/usage), its uploads (GET /api/uploads, paged by cursor, renamed and re-tagged with
// PATCH /api/uploads/{id}, deleted with DELETE /api/uploads/{id}) and its pins (the Pinning
// Service API at /pins on the upload host: listed paged by `before`, added, watched, removed).
// One search form filters both lists, by CID or by part of a name, and by a key-value (an
// upload's key-values are its pin's `meta`). Each list shows PAGE rows, and "Show more" adds
// the next page below them; a refresh asks again for as many as are shown.

import { KeyValueEditor, parseFilter } from './keyvalues.js'
import { copyText, el, focusRow, formatBytes, formatNumber, formatTime, keepFocusIn, replaceRows } from './ui.js'

const PAGE = 5
/** The most a refresh asks for at once (the APIs' own limit is 1000). */
const MOST = 500
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
    this.keyvalues = {}
    /** How many rows each list shows; "Show more" adds a page. */
    this.uploadsShown = PAGE
    this.pinsShown = PAGE
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
      uploadsMore: $('uploads-more'),
      pins: $('pins-list'),
      pinsNote: $('pins-note'),
      pinsMore: $('pins-more'),
      pinForm: $('pin-form'),
      pinCid: $('pin-cid'),
      pinName: $('pin-name'),
      pinStatus: $('pin-status'),
      searchForm: $('search-form'),
      search: $('search'),
      kvFilter: $('kv-filter'),
      searchError: $('search-error'),
      searchClear: $('search-clear')
    }
    this.wire()
  }

  wire () {
    const e = this.elements
    e.searchForm.addEventListener('submit', event => {
      event.preventDefault()
      const filter = parseFilter(e.kvFilter.value)
      if (filter.problem) {
        e.searchError.textContent = filter.problem
        e.kvFilter.setAttribute('aria-invalid', 'true')
        e.kvFilter.focus()
        return
      }
      e.searchError.textContent = ''
      e.kvFilter.removeAttribute('aria-invalid')
      this.setSearch(e.search.value, filter.keyvalues)
    })
    e.searchClear.addEventListener('click', () => {
      e.search.value = ''
      e.kvFilter.value = ''
      e.searchError.textContent = ''
      e.kvFilter.removeAttribute('aria-invalid')
      this.setSearch('', {})
      e.search.focus()
    })
    e.uploadsMore.addEventListener('click', () => this.moreUploads())
    e.pinsMore.addEventListener('click', () => this.morePins())
    e.pinForm.addEventListener('submit', event => {
      event.preventDefault()
      this.pin(e.pinCid.value.trim(), e.pinName.value.trim())
    })
  }

  async setSearch (text, keyvalues) {
    this.search = text.trim()
    this.keyvalues = keyvalues
    this.uploadsShown = PAGE
    this.pinsShown = PAGE
    await Promise.all([this.refreshUploads(), this.refreshPins()])
    const uploads = this.elements.uploads.children.length
    const pins = this.elements.pins.children.length
    this.announce(this.filtered()
      ? `Found ${uploads}${this.nextUploadCursor ? ' or more' : ''} uploads and ${pins}${this.nextPinBefore ? ' or more' : ''} pins`
      : 'Showing every upload and pin')
  }

  /** What the lists are filtered by, in words; empty when they are not. */
  filtered () {
    const parts = []
    if (this.search) parts.push(`“${this.search}”`)
    for (const [key, value] of Object.entries(this.keyvalues)) parts.push(`${key}=${value}`)
    return parts.join(' and ')
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

  /** The uploads shown, asked for again (as many as are shown: a refresh keeps the page's length). */
  async refreshUploads () {
    const e = this.elements
    let page
    try {
      page = await this.api().listUploads({ search: this.search, keyvalues: this.keyvalues, limit: Math.min(this.uploadsShown, MOST) })
    } catch (error) {
      e.uploadsNote.textContent = `Could not list uploads: ${error.message}`
      e.uploadsNote.hidden = false
      return
    }
    this.nextUploadCursor = page.nextCursor
    replaceRows(e.uploads, page.uploads.map(upload => this.uploadRow(upload)))
    const filter = this.filtered()
    e.uploadsNote.hidden = page.uploads.length > 0
    e.uploadsNote.textContent = filter ? `No upload matches ${filter}.` : 'No uploads yet.'
    e.uploadsMore.hidden = !page.nextCursor
  }

  /** The next page of uploads, below those shown; focus goes to the first of them. */
  async moreUploads () {
    const e = this.elements
    let page
    try {
      page = await this.api().listUploads({ search: this.search, keyvalues: this.keyvalues, cursor: this.nextUploadCursor, limit: PAGE })
    } catch (error) {
      this.announce(`Could not list more uploads: ${error.message}`)
      return
    }
    const rows = page.uploads.map(upload => this.uploadRow(upload))
    e.uploads.append(...rows)
    this.uploadsShown = e.uploads.children.length
    this.nextUploadCursor = page.nextCursor
    e.uploadsMore.hidden = !page.nextCursor
    if (rows[0]) focusRow(rows[0])
    this.announce(`Showing ${this.uploadsShown} uploads${page.nextCursor ? '; there are more' : ', all of them'}`)
  }

  uploadRow (upload) {
    const titleId = `upload-${++this.ids}`
    const status = upload.status === 'completed' && upload.pinned === false ? 'deleted' : upload.status
    const keyvalues = Object.entries(upload.keyvalues || {})
    const edit = this.button('Edit', titleId, '', () => {
      const opening = form.hidden
      form.hidden = !opening
      edit.setAttribute('aria-expanded', String(opening))
      if (opening) form.querySelector('input').focus()
    }, 'edit')
    edit.setAttribute('aria-expanded', 'false')
    const item = el('li', { class: 'record', 'aria-labelledby': titleId, 'data-key': upload.id },
      el('div', { class: 'record-head' },
        el('h4', { id: titleId }, upload.name || '(no name)'),
        el('span', { class: `badge badge-${status}` }, status)),
      el('p', { class: 'record-meta' },
        `${formatBytes(upload.size)} · ${formatTime(upload.createdAt)} · `,
        el('span', { class: 'mono' }, `id ${upload.id}`)),
      upload.cid
        ? el('p', { class: 'mono cid-text' }, upload.cid)
        : el('p', { class: 'muted' }, upload.status === 'failed' ? `Nothing stored: ${upload.error?.message || 'the upload failed.'}` : 'CID not known yet.'),
      keyvalues.length > 0 && el('ul', { class: 'kv-list plain-list', 'aria-label': 'Key-values' },
        keyvalues.map(([key, value]) => el('li', { class: 'kv' }, el('span', { class: 'kv-key-text' }, key), '=', value))),
      el('p', { class: 'record-status', role: 'status' }),
      el('div', { class: 'record-actions' },
        upload.cid && this.copyButton(upload.cid, titleId),
        upload.cid && el('a', { href: this.api().links(upload.cid).path, target: '_blank', rel: 'noopener', 'aria-describedby': titleId }, 'Open'),
        edit,
        this.button('Delete', titleId, 'danger', () => this.deleteUpload(upload), 'delete')))
    const form = this.editForm(upload, titleId, item, edit)
    item.append(form)
    return item
  }

  /**
   * The row's form to rename an upload and change its key-values, sent with PATCH: only what
   * changed (removed keys as `null`); the row is redrawn from the answer.
   */
  editForm (upload, titleId, item, edit) {
    const n = this.ids
    const nameId = `upload-name-${n}`
    const errorId = `upload-edit-error-${n}`
    const name = el('input', { id: nameId, autocomplete: 'off', spellcheck: 'false', maxlength: 1024 })
    name.value = upload.name || ''
    const editor = new KeyValueEditor({
      idPrefix: `upload-kv-${n}`,
      hint: 'Up to 16 tags to find the upload by (with Key-value in the search above).',
      pairs: upload.keyvalues || {}
    })
    const error = el('p', { id: errorId, class: 'error', role: 'alert' })
    const cancel = el('button', { type: 'button' }, 'Cancel')
    const form = el('form', { class: 'edit-form', novalidate: true, 'aria-label': `Edit ${upload.name || upload.id}`, hidden: true },
      el('div', { class: 'field' }, el('label', { for: nameId }, 'Name'), name),
      editor.element,
      el('div', { class: 'record-actions' },
        el('button', { type: 'submit', class: 'primary' }, 'Save'),
        cancel),
      error)
    cancel.addEventListener('click', () => {
      form.hidden = true
      error.textContent = ''
      name.value = upload.name || ''
      editor.set(upload.keyvalues || {})
      edit.setAttribute('aria-expanded', 'false')
      edit.focus()
    })
    form.addEventListener('submit', async event => {
      event.preventDefault()
      error.textContent = ''
      const { changes: keyvalues, problem, field } = editor.changesFrom(upload.keyvalues || {})
      if (problem) {
        error.textContent = problem
        field.focus()
        return
      }
      const changes = {}
      if (name.value.trim() && name.value.trim() !== upload.name) changes.name = name.value.trim()
      if (Object.keys(keyvalues).length > 0) changes.keyvalues = keyvalues
      if (Object.keys(changes).length === 0) {
        error.textContent = 'Nothing changed.'
        return
      }
      const button = event.submitter
      if (button) button.disabled = true
      let changed
      try {
        changed = await this.api().changeUpload(upload.id, changes)
      } catch (failure) {
        error.textContent = `Could not save: ${failure.message}`
        return
      } finally {
        if (button) button.disabled = false
      }
      const row = this.uploadRow(changed)
      item.replaceWith(row)
      const said = `Saved ${changed.name || changed.id}.`
      row.querySelector('.record-status').textContent = said
      row.querySelector('[data-action="edit"]').focus()
      this.announce(said)
    })
    return form
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

  /** The pins shown, asked for again (as many as are shown). */
  async refreshPins () {
    const e = this.elements
    let page
    try {
      page = await this.api().listPins({ search: this.search, keyvalues: this.keyvalues, limit: Math.min(this.pinsShown, MOST) })
    } catch (error) {
      e.pinsNote.textContent = `Could not list pins: ${error.message}`
      e.pinsNote.hidden = false
      return
    }
    replaceRows(e.pins, page.results.map(pin => this.pinRow(pin)))
    this.showPinPaging(page)
    const filter = this.filtered()
    e.pinsNote.hidden = page.results.length > 0
    e.pinsNote.textContent = filter ? `No pin matches ${filter}.` : 'Nothing pinned yet.'
  }

  /** `count` is every pin that matches: more are left while fewer are shown. */
  showPinPaging (page) {
    const e = this.elements
    // The next page holds what was created before the last pin shown.
    this.nextPinBefore = e.pins.children.length < page.count ? page.results.at(-1)?.created ?? null : null
    e.pinsMore.hidden = !this.nextPinBefore
  }

  /** The next page of pins, below those shown; focus goes to the first of them. */
  async morePins () {
    const e = this.elements
    let page
    try {
      page = await this.api().listPins({ search: this.search, keyvalues: this.keyvalues, before: this.nextPinBefore, limit: PAGE })
    } catch (error) {
      this.announce(`Could not list more pins: ${error.message}`)
      return
    }
    const rows = page.results.map(pin => this.pinRow(pin))
    e.pins.append(...rows)
    this.pinsShown = e.pins.children.length
    // `count` here is what is left from `before` on.
    this.nextPinBefore = rows.length < page.count ? page.results.at(-1)?.created ?? null : null
    e.pinsMore.hidden = !this.nextPinBefore
    if (rows[0]) focusRow(rows[0])
    this.announce(`Showing ${this.pinsShown} pins${this.nextPinBefore ? '; there are more' : ', all of them'}`)
  }

  pinRow (pin) {
    const titleId = `pin-${++this.ids}`
    const reason = pin.info?.reason
    return el('li', { class: 'record', 'aria-labelledby': titleId, 'data-key': pin.requestid },
      el('div', { class: 'record-head' },
        el('h4', { id: titleId }, pin.pin.name || '(no name)'),
        el('span', { class: `badge badge-${pin.status}` }, pin.status)),
      el('p', { class: 'record-meta' }, `Added ${formatTime(pin.created)}`),
      el('p', { class: 'mono cid-text' }, pin.pin.cid),
      reason && el('p', { class: 'error' }, reason),
      el('div', { class: 'record-actions' },
        this.copyButton(pin.pin.cid, titleId),
        el('a', { href: this.api().links(pin.pin.cid).path, target: '_blank', rel: 'noopener', 'aria-describedby': titleId }, 'Open'),
        this.button('Remove pin', titleId, 'danger', () => this.removePin(pin), 'remove')))
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
    }, 'copy')
  }

  button (text, describedBy, className, onClick, action = null) {
    const button = el('button', { type: 'button', class: className || null, 'aria-describedby': describedBy, 'data-action': action }, text)
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
