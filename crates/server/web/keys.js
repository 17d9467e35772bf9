// The account's API keys (/api/keys on the account host): listed, made (scopes, an expiry and
// optional limits) and revoked. A new key's secret comes in the one answer that makes it: the
// page shows it once, in a box that is emptied when hidden, and keeps it nowhere else. When
// the key the page is signed in with may not manage keys, the section says why (the server's
// 403 message) and the rest of the page carries on.

import { ListPager, el, facts, formatBytes, formatNumber, formatTime, keepFocusIn, offerCopy } from './ui.js'

export class Keys {
  /**
   * @param {object} options
   * @param {() => import('./api.js').Api} options.api
   * @param {(text: string) => void} options.announce
   * @param {(question: {title: string, text: string, action: string}) => Promise<boolean>} options.confirm
   * @param {() => void} options.onOwnKeyRevoked  called once the page's own key is revoked
   */
  constructor ({ api, announce, confirm, onOwnKeyRevoked }) {
    this.api = api
    this.announce = announce
    this.confirm = confirm
    this.onOwnKeyRevoked = onOwnKeyRevoked
    /** The id of the key whose secret is on show, if any. */
    this.shownId = null
    this.ids = 0
    const $ = id => document.getElementById(id)
    this.elements = {
      forbidden: $('keys-forbidden'),
      manage: $('keys-manage'),
      form: $('key-form'),
      name: $('key-name'),
      scopes: $('key-scopes'),
      expiry: $('key-expiry'),
      maxUses: $('key-max-uses'),
      maxSize: $('key-max-size'),
      maxSizeUnit: $('key-max-size-unit'),
      origins: $('key-origins'),
      formError: $('key-form-error'),
      newKey: $('new-key'),
      newKeyTitle: $('new-key-title'),
      secret: $('new-key-secret'),
      copy: $('new-key-copy'),
      done: $('new-key-done'),
      list: $('keys-list'),
      note: $('keys-note')
    }
    this.pager = new ListPager(this.elements.list, $('keys-more'), { noun: 'keys', announce })
    this.wire()
  }

  wire () {
    const e = this.elements
    e.form.addEventListener('submit', event => {
      event.preventDefault()
      this.create(event.submitter)
    })
    offerCopy(e.secret, e.copy, 'Key', this.announce)
    e.done.addEventListener('click', () => {
      this.hideSecret()
      document.getElementById('keys-list-title').focus()
    })
  }

  async refresh () {
    const e = this.elements
    let answer
    try {
      answer = await this.api().listKeys()
    } catch (error) {
      if (error.status === 403) return this.forbid(error.message)
      e.note.textContent = `Could not list keys: ${error.message}`
      e.note.hidden = false
      return
    }
    e.forbidden.hidden = true
    e.manage.hidden = false
    // The server lists the oldest first; the newest (most likely the one just made) leads here,
    // after the key this page is signed in with, which is never behind "Show more".
    const keys = [...answer.keys].reverse().sort((a, b) => this.isOwn(b) - this.isOwn(a))
    this.pager.render(keys.map(key => this.row(key)))
    e.note.hidden = keys.length > 0
    e.note.textContent = 'No keys.'
  }

  /** The signed-in key lacks the `keys` scope: nothing here can work, so say why instead. */
  forbid (message) {
    const e = this.elements
    e.forbidden.textContent = `The key you signed in with cannot manage keys (${message}). ` +
      'Sign in with a key that has the “keys” scope to see, make and revoke them.'
    e.forbidden.hidden = false
    e.manage.hidden = true
  }

  /** Whether the page is signed in with `key` (its prefix is the start of its secret). */
  isOwn (key) {
    return Boolean(key.prefix) && this.api().token.startsWith(key.prefix)
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
      created = await this.api().createKey(request)
    } catch (error) {
      e.formError.textContent = `Could not create the key: ${error.message}`
      return
    } finally {
      if (button) button.disabled = false
    }
    e.form.reset()
    this.showSecret(created)
    const label = created.name ? `“${created.name}”` : created.prefix
    this.announce(`Key ${label} created. Copy it now: it will not be shown again.`)
    await this.refresh()
  }

  /** The form as a request, or the first problem with it and the field to fix. */
  readForm () {
    const e = this.elements
    const scopes = [...e.scopes.querySelectorAll('input[type="checkbox"]:checked')].map(input => input.value)
    if (scopes.length === 0) {
      return { problem: 'Choose at least one scope.', field: e.scopes.querySelector('input') }
    }
    const request = { name: e.name.value.trim(), scopes }
    if (e.expiry.value) request.expiresIn = Number(e.expiry.value)

    const maxUses = Number(e.maxUses.value)
    if (e.maxUses.validity.badInput || (e.maxUses.value && !(Number.isSafeInteger(maxUses) && maxUses >= 1))) {
      return { problem: 'Most uploads must be a whole number, at least 1.', field: e.maxUses }
    }
    if (e.maxUses.value) request.maxUses = maxUses

    const maxBytes = Math.round(Number(e.maxSize.value) * Number(e.maxSizeUnit.value))
    if (e.maxSize.validity.badInput || (e.maxSize.value && !(Number.isSafeInteger(maxBytes) && maxBytes >= 1))) {
      return { problem: 'Largest upload must be a size of at least 1 byte.', field: e.maxSize }
    }
    if (e.maxSize.value) request.maxUploadBytes = maxBytes

    // Origins as browsers send them have no path: a pasted `https://app.example/` loses its
    // slash. Anything else wrong with one, the server names.
    const origins = e.origins.value.split(/[\s,]+/).filter(Boolean).map(origin => origin.replace(/\/+$/, ''))
    if (origins.length > 0) request.origins = origins
    return { request }
  }

  showSecret (created) {
    const e = this.elements
    this.shownId = created.id
    e.newKeyTitle.textContent = created.name ? `Your new key “${created.name}”` : 'Your new key'
    e.secret.value = created.key
    e.newKey.hidden = false
    e.newKeyTitle.focus()
  }

  /** Empties the box too: the secret stays nowhere in the page once hidden. */
  hideSecret () {
    const e = this.elements
    this.shownId = null
    e.secret.value = ''
    e.newKey.hidden = true
  }

  row (key) {
    const titleId = `key-row-${++this.ids}`
    const state = keyState(key, Date.now())
    const shown = [
      ['Key', el('span', { class: 'mono' }, `${key.prefix}…`)],
      ['Scopes', key.scopes.join(', ')],
      ['Created', formatTime(key.createdAt)],
      [state === 'expired' ? 'Expired' : 'Expires', key.expiresAt ? formatTime(key.expiresAt) : 'Never'],
      ['Uploads', key.maxUses ? `${formatNumber(key.uses)} of ${formatNumber(key.maxUses)}` : formatNumber(key.uses)],
      ['Last used', key.lastUsedAt ? formatTime(key.lastUsedAt) : 'Never'],
      key.maxUploadBytes && ['Largest upload', formatBytes(key.maxUploadBytes)],
      key.origins.length > 0 && ['Only from', key.origins.join(', ')]
    ]
    const revoke = el('button', { type: 'button', class: 'danger', 'aria-describedby': titleId, 'data-action': 'revoke' }, 'Revoke')
    revoke.addEventListener('click', () => this.revoke(key))
    return el('li', { class: 'record', 'aria-labelledby': titleId, 'data-key': key.id },
      el('div', { class: 'record-head' },
        el('h4', { id: titleId }, key.name || '(no name)'),
        el('span', { class: `badge badge-${state.replace(' ', '-')}` }, state)),
      this.isOwn(key) && el('p', { class: 'record-meta' }, 'This page is signed in with this key.'),
      facts(shown),
      el('div', { class: 'record-actions' }, revoke))
  }

  async revoke (key) {
    const label = key.name ? `“${key.name}”` : key.prefix
    const own = this.isOwn(key)
    const yes = await this.confirm({
      title: `Revoke the key ${label}?`,
      text: (own ? 'This page is signed in with it: revoking it signs you out here. ' : '') +
        'Everything using the key, and the upload links made with it, stop working at once. ' +
        'A revoked key cannot be restored.',
      action: 'Revoke'
    })
    if (!yes) return
    try {
      await this.api().revokeKey(key.id)
    } catch (error) {
      this.announce(`Could not revoke the key ${label}: ${error.message}`)
      await this.refresh()
      keepFocusIn('keys-list-title')
      return
    }
    this.announce(`Revoked the key ${label}`)
    if (own) return this.onOwnKeyRevoked()
    if (this.shownId === key.id) this.hideSecret()
    await this.refresh()
    keepFocusIn('keys-list-title')
  }
}

/** `active`, `expired` or `used up` (a key with no uploads left). */
function keyState (key, nowMs) {
  if (key.expiresAt && Date.parse(key.expiresAt) <= nowMs) return 'expired'
  if (key.maxUses && key.uses >= key.maxUses) return 'used up'
  return 'active'
}
