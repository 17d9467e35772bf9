// The account's IPNS names (GET /api/names on the upload host): each with its label, the name
// (shortened; the whole of it in the title), the CID it points at, its sequence and a link to
// the gateway's /ipns/{name}/. "Point to…" opens a small form on the row that sends
// PUT /api/names/{name} {"cid"} and shows the record it answers, or the server's message.

import { ListPager, el, formatTime } from './ui.js'

export class Names {
  /**
   * @param {object} options
   * @param {() => import('./api.js').Api} options.api
   * @param {(text: string) => void} options.announce
   */
  constructor ({ api, announce }) {
    this.api = api
    this.announce = announce
    this.ids = 0
    const $ = id => document.getElementById(id)
    this.elements = { list: $('names-list'), note: $('names-note') }
    this.pager = new ListPager(this.elements.list, $('names-more'), { noun: 'names', announce })
  }

  async refresh () {
    const e = this.elements
    let answer
    try {
      answer = await this.api().listNames()
    } catch (error) {
      // A key with neither `names` nor `read`: say so, and leave the rest of the page alone.
      e.note.textContent = error.status === 403
        ? `This key cannot read the account's names: ${error.message}`
        : `Could not list names: ${error.message}`
      e.note.hidden = false
      this.pager.render([])
      return
    }
    this.pager.render(answer.results.map(name => this.row(name)))
    e.note.textContent = 'No names yet. Make one with POST /api/names on the upload host.'
    e.note.hidden = answer.results.length > 0
  }

  row (record) {
    const titleId = `name-${++this.ids}`
    const status = el('p', { role: 'status' })
    const item = el('li', { class: 'record', 'aria-labelledby': titleId, 'data-key': record.name },
      el('div', { class: 'record-head' },
        el('h4', { id: titleId }, record.label || '(no label)'),
        el('span', { class: 'badge' }, `sequence ${record.sequence}`)),
      el('p', { class: 'record-meta' },
        el('span', { class: 'mono', title: record.name }, shortName(record.name)),
        ` · updated ${formatTime(record.updatedAt)}`),
      record.cid
        ? el('p', { class: 'mono cid-text' }, record.cid)
        : el('p', { class: 'mono cid-text' }, record.value),
      status)
    const point = el('button', { type: 'button', 'aria-describedby': titleId, 'aria-expanded': 'false', 'data-action': 'point' }, 'Point to…')
    const form = this.pointForm(record, titleId, item, point)
    point.addEventListener('click', () => {
      const opening = form.hidden
      form.hidden = !opening
      point.setAttribute('aria-expanded', String(opening))
      if (opening) form.querySelector('input').focus()
    })
    item.append(
      el('div', { class: 'record-actions' },
        point,
        el('a', { href: this.api().nameLink(record.name), target: '_blank', rel: 'noopener', 'aria-describedby': titleId }, 'Open')),
      form)
    return item
  }

  /** The row's form: a CID, checked to be there, sent with PUT; the row is redrawn from the answer. */
  pointForm (record, titleId, item, point) {
    const inputId = `name-cid-${this.ids}`
    const errorId = `name-error-${this.ids}`
    const input = el('input', { id: inputId, class: 'mono', spellcheck: 'false', autocomplete: 'off', required: true, 'aria-describedby': errorId })
    const error = el('p', { id: errorId, class: 'error', role: 'alert' })
    const cancel = el('button', { type: 'button' }, 'Cancel')
    const form = el('form', { class: 'inline-form', novalidate: true, 'aria-labelledby': titleId, hidden: true },
      el('div', { class: 'field grow' }, el('label', { for: inputId }, 'New CID'), input),
      el('button', { type: 'submit', class: 'primary' }, 'Point'),
      cancel,
      error)
    cancel.addEventListener('click', () => {
      form.hidden = true
      error.textContent = ''
      point.setAttribute('aria-expanded', 'false')
      point.focus()
    })
    form.addEventListener('submit', async event => {
      event.preventDefault()
      const cid = input.value.trim()
      if (!cid) {
        error.textContent = 'Enter the CID the name should point to.'
        input.focus()
        return
      }
      error.textContent = ''
      const button = event.submitter
      if (button) button.disabled = true
      let next
      try {
        next = await this.api().pointName(record.name, cid)
      } catch (failure) {
        error.textContent = `Could not point the name: ${failure.message}`
        input.focus()
        return
      } finally {
        if (button) button.disabled = false
      }
      const row = this.row(next)
      item.replaceWith(row)
      this.pager.rows = this.pager.rows.map(shown => shown === item ? row : shown)
      row.querySelector('[role="status"]').textContent = `Now points to ${next.cid || next.value} (sequence ${next.sequence}).`
      row.querySelector('.record-actions button').focus()
      this.announce(`${next.label || shortName(next.name)} now points to ${next.cid || next.value}`)
    })
    return form
  }
}

/** `k51qzi5u…a1b2c3`: enough to tell names apart; the whole name is in the title. */
function shortName (name) {
  return name.length > 20 ? `${name.slice(0, 10)}…${name.slice(-6)}` : name
}
