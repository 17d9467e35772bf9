// Webhook endpoints (/api/webhooks on the account host, scope `keys`): added (URL, events,
// description), listed and deleted. The signing secret comes in the one answer that makes an
// endpoint: shown once, in a box emptied when hidden. Each endpoint has a collapsible list of
// its deliveries (status, attempts, the last answer), newest first and paged, with Retry on
// those whose last attempt failed; after a retry the list is asked again until the new attempt
// is in it.

import { ListPager, el, focusRow, formatNumber, formatTime, keepFocusIn, offerCopy, replaceRows, rowButton } from './ui.js'

/** Deliveries asked for at once. */
const DELIVERIES_PAGE = 5
/** After a retry, how often and how long the deliveries are asked for until its attempt shows. */
const RETRY_POLL_MS = 1000
const RETRY_WAIT_MS = 30_000

export class Webhooks {
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
    this.shownId = null
    /** The deliveries panels open, by endpoint id, so a refresh of the list keeps them open. */
    this.open = new Set()
    const $ = id => document.getElementById(id)
    this.elements = {
      forbidden: $('webhooks-forbidden'),
      manage: $('webhooks-manage'),
      form: $('webhook-form'),
      url: $('webhook-url'),
      events: $('webhook-events'),
      description: $('webhook-description'),
      formError: $('webhook-form-error'),
      newWebhook: $('new-webhook'),
      newWebhookTitle: $('new-webhook-title'),
      secret: $('new-webhook-secret'),
      copy: $('new-webhook-copy'),
      done: $('new-webhook-done'),
      list: $('webhooks-list'),
      note: $('webhooks-note'),
      refresh: $('webhooks-refresh')
    }
    this.pager = new ListPager(this.elements.list, $('webhooks-more'), { noun: 'endpoints', announce })
    this.wire()
  }

  wire () {
    const e = this.elements
    e.form.addEventListener('submit', event => {
      event.preventDefault()
      this.create(event.submitter)
    })
    offerCopy(e.secret, e.copy, 'Signing secret', this.announce)
    e.done.addEventListener('click', () => {
      this.hideSecret()
      document.getElementById('webhooks-list-title').focus()
    })
    e.refresh.addEventListener('click', async () => {
      await this.refresh()
      this.announce(`${formatNumber(this.pager.rows.length)} ${this.pager.rows.length === 1 ? 'endpoint' : 'endpoints'}`)
    })
  }

  async refresh () {
    const e = this.elements
    let answer
    try {
      answer = await this.api().listWebhooks()
    } catch (error) {
      if (error.status === 403) {
        e.forbidden.textContent = `The key you signed in with cannot manage webhooks (${error.message}). ` +
          'Sign in with a key that has the “keys” scope to see, add and delete them.'
        e.forbidden.hidden = false
        e.manage.hidden = true
        return
      }
      e.note.textContent = `Could not list webhooks: ${error.message}`
      e.note.hidden = false
      return
    }
    e.forbidden.hidden = true
    e.manage.hidden = false
    const hooks = [...answer.webhooks].reverse()
    this.pager.render(hooks.map(hook => this.row(hook)))
    e.note.textContent = 'No endpoints.'
    e.note.hidden = hooks.length > 0
  }

  async create (button) {
    const e = this.elements
    e.formError.textContent = ''
    const url = e.url.value.trim()
    if (!url) {
      e.formError.textContent = 'Enter the URL to send events to.'
      e.url.focus()
      return
    }
    const events = [...e.events.querySelectorAll('input:checked')].map(input => input.value)
    if (events.length === 0) {
      e.formError.textContent = 'Choose at least one event.'
      e.events.querySelector('input').focus()
      return
    }
    const request = { url, events }
    const description = e.description.value.trim()
    if (description) request.description = description
    if (button) button.disabled = true
    let created
    try {
      created = await this.api().createWebhook(request)
    } catch (error) {
      e.formError.textContent = `Could not add the endpoint: ${error.message}`
      e.url.focus()
      return
    } finally {
      if (button) button.disabled = false
    }
    e.form.reset()
    this.showSecret(created)
    this.announce('Endpoint added. Copy its signing secret now: it will not be shown again.')
    await this.refresh()
  }

  showSecret (created) {
    const e = this.elements
    this.shownId = created.id
    e.newWebhookTitle.textContent = `The signing secret of ${created.description || created.url}`
    e.secret.value = created.secret
    e.newWebhook.hidden = false
    e.newWebhookTitle.focus()
  }

  hideSecret () {
    const e = this.elements
    this.shownId = null
    e.secret.value = ''
    e.newWebhook.hidden = true
  }

  row (hook) {
    const n = ++this.ids
    const titleId = `webhook-row-${n}`
    const panelId = `webhook-deliveries-${n}`
    const panel = new Deliveries(this, hook, panelId, titleId)
    const toggle = rowButton('Deliveries', titleId, () => {
      const opening = toggle.getAttribute('aria-expanded') !== 'true'
      toggle.setAttribute('aria-expanded', String(opening))
      panel.element.hidden = !opening
      if (opening) {
        this.open.add(hook.id)
        panel.refresh()
      } else {
        this.open.delete(hook.id)
      }
    }, { action: 'deliveries' })
    toggle.setAttribute('aria-expanded', 'false')
    toggle.setAttribute('aria-controls', panelId)
    const remove = rowButton('Delete', titleId, () => this.remove(hook), { className: 'danger', action: 'delete' })
    const item = el('li', { class: 'record', 'aria-labelledby': titleId, 'data-key': hook.id },
      el('div', { class: 'record-head' }, el('h4', { id: titleId }, hook.description || hook.url)),
      el('dl', { class: 'key-facts' },
        el('dt', {}, 'URL'), el('dd', { class: 'mono' }, hook.url),
        el('dt', {}, 'Events'), el('dd', {}, hook.events.join(', ')),
        el('dt', {}, 'Added'), el('dd', {}, formatTime(hook.createdAt))),
      el('div', { class: 'record-actions' }, toggle, remove),
      panel.element)
    if (this.open.has(hook.id)) {
      toggle.setAttribute('aria-expanded', 'true')
      panel.element.hidden = false
      panel.refresh()
    }
    return item
  }

  async remove (hook) {
    const label = hook.description ? `“${hook.description}”` : hook.url
    const yes = await this.confirm({
      title: `Delete the endpoint ${label}?`,
      text: 'Cairn stops sending it events at once, and its deliveries still to be sent fail.',
      action: 'Delete'
    })
    if (!yes) return
    try {
      await this.api().deleteWebhook(hook.id)
      this.announce(`Deleted the endpoint ${label}`)
      this.open.delete(hook.id)
      if (this.shownId === hook.id) this.hideSecret()
    } catch (error) {
      this.announce(`Could not delete the endpoint ${label}: ${error.message}`)
    }
    await this.refresh()
    keepFocusIn('webhooks-list-title')
  }
}

/** One endpoint's deliveries: a list paged by `before`, with Refresh, Show more and Retry. */
class Deliveries {
  constructor (webhooks, hook, id, titleId) {
    this.webhooks = webhooks
    this.hook = hook
    this.titleId = titleId
    this.shown = DELIVERIES_PAGE
    this.headingId = `${id}-title`
    this.list = el('ul', { class: 'records plain-list deliveries', 'aria-labelledby': this.headingId })
    this.note = el('p', { class: 'muted', hidden: true })
    this.status = el('p', { class: 'record-status', role: 'status' })
    this.more = el('button', { type: 'button', class: 'more', 'aria-describedby': this.headingId, hidden: true }, 'Show more deliveries')
    this.more.addEventListener('click', () => this.showMore())
    const refresh = el('button', { type: 'button', 'aria-describedby': this.headingId }, 'Refresh')
    refresh.addEventListener('click', async () => {
      await this.refresh()
      this.status.textContent = `Deliveries as of ${new Date().toLocaleTimeString()}.`
    })
    this.element = el('div', { id, class: 'deliveries-panel', hidden: true },
      el('div', { class: 'list-head' },
        el('h5', { id: this.headingId, tabindex: '-1' }, `Deliveries to ${hook.description || hook.url}`),
        refresh),
      this.status,
      this.note,
      this.list,
      this.more)
  }

  get api () { return this.webhooks.api() }

  /** Asks again for as many deliveries as are shown; answers them. */
  async refresh () {
    let answer
    try {
      answer = await this.api.listDeliveries(this.hook.id, { limit: this.shown })
    } catch (error) {
      this.note.textContent = `Could not list the deliveries: ${error.message}`
      this.note.hidden = false
      return null
    }
    const deliveries = answer.deliveries
    replaceRows(this.list, deliveries.map(delivery => this.row(delivery)))
    this.note.textContent = 'Nothing sent yet: an event of the types it takes is sent here as it happens.'
    this.note.hidden = deliveries.length > 0
    this.more.hidden = deliveries.length < this.shown
    return deliveries
  }

  async showMore () {
    const last = this.list.lastElementChild?.dataset.key
    let answer
    try {
      answer = await this.api.listDeliveries(this.hook.id, { before: last, limit: DELIVERIES_PAGE })
    } catch (error) {
      this.status.textContent = `Could not list more deliveries: ${error.message}`
      return
    }
    const rows = answer.deliveries.map(delivery => this.row(delivery))
    this.list.append(...rows)
    this.shown = this.list.children.length
    this.more.hidden = rows.length < DELIVERIES_PAGE
    if (rows[0]) focusRow(rows[0])
    this.webhooks.announce(`Showing ${this.shown} deliveries`)
  }

  row (delivery) {
    const titleId = `${this.headingId}-${delivery.id}`
    const last = delivery.attempts.at(-1)
    const lastFailed = last && !(last.responseStatus >= 200 && last.responseStatus < 300)
    const answer = last
      ? `${last.responseStatus ? `HTTP ${last.responseStatus}` : 'no answer'}${last.error ? ` (${last.error})` : ''}, ${formatTime(last.at)}, ${formatNumber(last.durationMs)} ms`
      : 'not tried yet'
    const retry = (delivery.status === 'failed' || lastFailed) &&
      rowButton('Retry', titleId, () => this.retry(delivery), { action: 'retry' })
    const attempts = delivery.attempts.length
    return el('li', { class: 'record delivery', 'aria-labelledby': titleId, 'data-key': String(delivery.id) },
      el('div', { class: 'record-head' },
        el('h6', { id: titleId }, `${delivery.type} · event ${delivery.eventId}`),
        el('span', { class: `badge badge-${delivery.status}` }, delivery.status)),
      el('dl', { class: 'key-facts' },
        el('dt', {}, 'Attempts'), el('dd', { class: 'attempts' }, formatNumber(attempts)),
        el('dt', {}, 'Last answer'), el('dd', {}, answer),
        delivery.nextAttemptAt && delivery.status === 'pending' && [el('dt', {}, 'Next attempt'), el('dd', {}, formatTime(delivery.nextAttemptAt))],
        el('dt', {}, 'Created'), el('dd', {}, formatTime(delivery.createdAt))),
      retry && el('div', { class: 'record-actions' }, retry))
  }

  /** Queues it again now, then asks for the deliveries until the new attempt is in them. */
  async retry (delivery) {
    const label = `${delivery.type} (event ${delivery.eventId})`
    let queued
    try {
      queued = await this.api.retryDelivery(this.hook.id, delivery.id)
    } catch (error) {
      this.status.textContent = `Could not retry ${label}: ${error.message}`
      return
    }
    const before = queued.attempts.length
    this.status.textContent = `Retrying ${label}…`
    const deadline = Date.now() + RETRY_WAIT_MS
    while (Date.now() < deadline) {
      await new Promise(resolve => setTimeout(resolve, RETRY_POLL_MS))
      const deliveries = await this.refresh()
      const now = deliveries?.find(d => d.id === delivery.id)
      if (now && now.attempts.length > before) {
        const last = now.attempts.at(-1)
        const said = `Retried ${label}: ${now.status}, ${last.responseStatus ? `HTTP ${last.responseStatus}` : last.error || 'no answer'} (attempt ${now.attempts.length}).`
        this.status.textContent = said
        return
      }
    }
    this.status.textContent = `Retry of ${label} queued; no new attempt yet. Refresh to see it.`
  }
}
