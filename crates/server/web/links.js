// Upload links (/api/upload-links on the upload host): made (expiry, number of uploads, largest
// upload, types, archive mode, key-values), listed with what each allows and how much of it is
// used, and revoked. A link's secret is in its URLs, which only the answer that makes it
// carries: the page shows them once, in a box that is emptied when hidden. A key with `keys`
// sees every link of the account; one with `upload` alone, the links it made.

import { KeyValueEditor } from './keyvalues.js'
import { ListPager, el, facts, formatBytes, formatKeyValues, formatNumber, formatTime, keepFocusIn, offerCopy, rowButton } from './ui.js'

const ARCHIVE_MODES = { extract: 'always extracted', preserve: 'always kept whole' }

export class Links {
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
    this.ids = 0
    /** The id of the link whose URLs are on show, if any. */
    this.shownId = null
    const $ = id => document.getElementById(id)
    this.elements = {
      forbidden: $('links-forbidden'),
      form: $('link-form'),
      name: $('link-name'),
      expiry: $('link-expiry'),
      uploads: $('link-uploads'),
      maxSize: $('link-max-size'),
      maxSizeUnit: $('link-max-size-unit'),
      types: $('link-types'),
      archiveMode: $('link-archive-mode'),
      formError: $('link-form-error'),
      newLink: $('new-link'),
      newLinkTitle: $('new-link-title'),
      url: $('new-link-url'),
      tus: $('new-link-tus'),
      copy: $('new-link-copy'),
      copyTus: $('new-link-copy-tus'),
      done: $('new-link-done'),
      list: $('links-list'),
      note: $('links-note'),
      refresh: $('links-refresh')
    }
    this.keyvalues = new KeyValueEditor({
      idPrefix: 'link-kv',
      hint: 'Tags every upload through it carries (over any it sends), to find them again by.'
    })
    $('link-keyvalues').replaceWith(this.keyvalues.element)
    this.pager = new ListPager(this.elements.list, $('links-more'), { noun: 'links', announce })
    this.wire()
  }

  wire () {
    const e = this.elements
    e.form.addEventListener('submit', event => {
      event.preventDefault()
      this.create(event.submitter)
    })
    offerCopy(e.url, e.copy, 'Link', this.announce)
    offerCopy(e.tus, e.copyTus, 'TUS endpoint', this.announce)
    e.done.addEventListener('click', () => {
      this.hideUrls()
      document.getElementById('links-list-title').focus()
    })
    e.refresh.addEventListener('click', async () => {
      await this.refresh()
      this.announce(`${formatNumber(this.pager.rows.length)} ${this.pager.rows.length === 1 ? 'link' : 'links'}`)
    })
  }

  async refresh () {
    const e = this.elements
    let answer
    try {
      answer = await this.api().listLinks()
    } catch (error) {
      // A key with neither `upload` nor `keys` can neither make nor see links.
      if (error.status === 403) {
        e.forbidden.textContent = `The key you signed in with cannot make or see upload links (${error.message}). ` +
          'Sign in with a key that has the “upload” or “keys” scope.'
        e.forbidden.hidden = false
        e.form.hidden = true
      } else {
        e.note.textContent = `Could not list links: ${error.message}`
        e.note.hidden = false
      }
      return
    }
    e.forbidden.hidden = true
    e.form.hidden = false
    const now = Date.now()
    this.pager.render(answer.links.map(link => this.row(link, now)))
    e.note.textContent = 'No links. Make one with the form.'
    e.note.hidden = answer.links.length > 0
  }

  async create (button) {
    const e = this.elements
    e.formError.textContent = ''
    const { request, problem, field } = this.readForm()
    if (problem) {
      e.formError.textContent = problem
      field.focus()
      return
    }
    if (button) button.disabled = true
    let created
    try {
      created = await this.api().createLink(request)
    } catch (error) {
      e.formError.textContent = `Could not make the link: ${error.message}`
      return
    } finally {
      if (button) button.disabled = false
    }
    e.form.reset()
    this.keyvalues.set({})
    this.showUrls(created)
    this.announce(`Link ${created.name ? `“${created.name}” ` : ''}made. Copy it now: it will not be shown again.`)
    await this.refresh()
  }

  /** The form as a request, or the first problem with it and the field to fix. */
  readForm () {
    const e = this.elements
    const request = { expiresIn: Number(e.expiry.value) }
    const name = e.name.value.trim()
    if (name) request.name = name
    const uploads = Number(e.uploads.value || 1)
    if (e.uploads.validity.badInput || !(Number.isSafeInteger(uploads) && uploads >= 1 && uploads <= 10000)) {
      return { problem: 'Number of uploads must be a whole number from 1 to 10,000.', field: e.uploads }
    }
    request.uploads = uploads
    const maxBytes = Math.round(Number(e.maxSize.value) * Number(e.maxSizeUnit.value))
    if (e.maxSize.validity.badInput || (e.maxSize.value && !(Number.isSafeInteger(maxBytes) && maxBytes >= 1))) {
      return { problem: 'Largest upload must be a size of at least 1 byte.', field: e.maxSize }
    }
    if (e.maxSize.value) request.maxBytes = maxBytes
    const types = e.types.value.split(/[\s,]+/).filter(Boolean)
    if (types.length > 0) request.mimeTypes = types
    if (e.archiveMode.value) request.archiveMode = e.archiveMode.value
    const { pairs, problem, field } = this.keyvalues.read()
    if (problem) {
      e.form.querySelector('details').open = true
      return { problem, field }
    }
    if (Object.keys(pairs).length > 0) request.keyvalues = pairs
    return { request }
  }

  showUrls (created) {
    const e = this.elements
    this.shownId = created.id
    e.newLinkTitle.textContent = created.name ? `Your new link “${created.name}”` : 'Your new link'
    e.url.value = created.url
    e.tus.value = created.tusEndpoint
    e.newLink.hidden = false
    e.newLinkTitle.focus()
  }

  /** Empties the boxes too: the secret stays nowhere in the page once hidden. */
  hideUrls () {
    const e = this.elements
    this.shownId = null
    e.url.value = ''
    e.tus.value = ''
    e.newLink.hidden = true
  }

  row (link, now) {
    const titleId = `link-row-${++this.ids}`
    const state = linkState(link, now)
    const shown = [
      ['Link', el('span', { class: 'mono' }, link.id)],
      ['Uploads', `${formatNumber(link.uses)} of ${formatNumber(link.uploads)} used`],
      [state === 'expired' ? 'Expired' : 'Expires', formatTime(link.expiresAt)],
      ['Largest upload', link.maxBytes ? formatBytes(link.maxBytes) : 'No limit of its own'],
      ['Types', link.mimeTypes.length > 0 ? link.mimeTypes.join(', ') : 'Any'],
      link.archiveMode && ['Archives', ARCHIVE_MODES[link.archiveMode] || link.archiveMode],
      formatKeyValues(link.keyvalues) && ['Key-values', formatKeyValues(link.keyvalues)],
      ['Created', formatTime(link.createdAt)]
    ]
    const revoke = rowButton('Revoke', titleId, () => this.revoke(link), { className: 'danger', action: 'revoke' })
    return el('li', { class: 'record', 'aria-labelledby': titleId, 'data-key': link.id },
      el('div', { class: 'record-head' },
        el('h4', { id: titleId }, link.name || '(uploads keep their names)'),
        el('span', { class: `badge badge-${state.replace(' ', '-')}` }, state)),
      facts(shown),
      el('div', { class: 'record-actions' }, revoke))
  }

  async revoke (link) {
    const label = link.name ? `“${link.name}”` : link.id
    const yes = await this.confirm({
      title: `Revoke the link ${label}?`,
      text: 'It takes no more uploads, at once; what was uploaded through it stays. A revoked link cannot be restored.',
      action: 'Revoke'
    })
    if (!yes) return
    try {
      await this.api().revokeLink(link.id)
      this.announce(`Revoked the link ${label}`)
      if (this.shownId === link.id) this.hideUrls()
    } catch (error) {
      this.announce(`Could not revoke the link ${label}: ${error.message}`)
    }
    await this.refresh()
    keepFocusIn('links-list-title')
  }
}

/** `active`, `expired` or `used up` (a link with no uploads left). */
function linkState (link, nowMs) {
  if (Date.parse(link.expiresAt) <= nowMs) return 'expired'
  if (link.uses >= link.uploads) return 'used up'
  return 'active'
}
