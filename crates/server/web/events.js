// Live events: the account's event stream (GET /api/events, Server-Sent Events on the account
// host), followed from when the section is first opened: each event shown as it comes (type,
// time, name, CID), newest first, the last MAX_EVENTS kept. Pause holds new events back
// without losing them, Resume shows them. The stream is read with fetch rather than
// EventSource, so the token goes in the Authorization header and in no URL; a stream that
// ends or breaks is opened again with Last-Event-ID, as EventSource would, so nothing is
// missed or shown twice.

import { el, focusRow } from './ui.js'

export const MAX_EVENTS = 50
/** Rows shown at first, and added by "Show more". */
const STEP = 10
/** Waits before opening a broken stream again: longer each time, until an event comes. */
const BACKOFF_MS = [1000, 2000, 5000, 10000, 20000]

/** What each event type says, and its badge's look. */
const KINDS = {
  'upload.completed': ['Upload completed', 'completed'],
  'upload.failed': ['Upload failed', 'failed'],
  'upload.deleted': ['Upload deleted', 'deleted'],
  'pin.pinned': ['Pinned', 'pinned'],
  'pin.failed': ['Pin failed', 'failed'],
  'pin.removed': ['Pin removed', 'deleted']
}

export class LiveEvents {
  /**
   * @param {object} options
   * @param {() => import('./api.js').Api} options.api
   * @param {(text: string) => void} options.announce
   */
  constructor ({ api, announce }) {
    this.api = api
    this.announce = announce
    this.running = false
    this.paused = false
    this.lastEventId = null
    this.failures = 0
    this.abort = null
    /** Rows for the events received, newest first, at most MAX_EVENTS. */
    this.rows = []
    /** How many received while paused are not shown yet. */
    this.held = 0
    this.shown = STEP
    const $ = id => document.getElementById(id)
    this.elements = {
      pause: $('events-pause'),
      clear: $('events-clear'),
      state: $('events-state'),
      list: $('events-list'),
      note: $('events-note'),
      more: $('events-more')
    }
    this.wire()
  }

  wire () {
    const e = this.elements
    e.pause.addEventListener('click', () => (this.paused ? this.resume() : this.pause()))
    e.clear.addEventListener('click', () => {
      this.rows = []
      this.held = 0
      this.shown = STEP
      this.draw()
      this.showState()
      this.announce('Events cleared')
    })
    e.more.addEventListener('click', () => {
      const first = e.list.children.length
      this.shown = Math.min(this.shown + STEP, MAX_EVENTS)
      this.draw()
      const row = e.list.children[first]
      if (row) focusRow(row)
    })
  }

  /** Starts following, once; later calls do nothing. */
  start () {
    if (this.running) return
    this.running = true
    this.follow()
  }

  stop () {
    this.running = false
    this.abort?.abort()
  }

  pause () {
    this.paused = true
    this.elements.pause.textContent = 'Resume'
    this.showState()
  }

  resume () {
    this.paused = false
    this.elements.pause.textContent = 'Pause'
    const held = this.held
    this.held = 0
    // What came meanwhile goes in at the top, newest first, as it would have.
    const e = this.elements
    const fresh = this.rows.slice(0, Math.min(held, this.shown))
    for (const row of [...fresh].reverse()) e.list.prepend(row)
    this.trim()
    this.showState()
    if (held > 0) this.announce(`${held} ${held === 1 ? 'event' : 'events'} shown`)
  }

  /** Opens the stream and reads it; opens it again after it ends or breaks, until stopped. */
  async follow () {
    while (this.running) {
      this.abort = new AbortController()
      try {
        const response = await this.api().accountEvents({ lastEventId: this.lastEventId, signal: this.abort.signal })
        this.connected = true
        this.showState()
        await this.read(response.body)
      } catch (error) {
        if (error.name === 'AbortError' || !this.running) return
        if (error.status === 401 || error.status === 403) {
          // A key without the `read` scope: say so, and stop asking.
          this.running = false
          this.connected = false
          this.elements.state.textContent = `This key cannot follow the account's events: ${error.message}`
          this.elements.pause.disabled = true
          return
        }
        this.problem = error.message
      }
      if (!this.running) return
      this.connected = false
      this.showState()
      await new Promise(resolve => setTimeout(resolve, BACKOFF_MS[Math.min(this.failures++, BACKOFF_MS.length - 1)]))
    }
  }

  /** Reads Server-Sent Events (https://html.spec.whatwg.org/multipage/server-sent-events.html) until the stream ends. */
  async read (body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader()
    let buffer = ''
    let event = { type: '', data: [], id: null }
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      buffer += value
      const lines = buffer.split(/\r\n|\r|\n/)
      // The last piece may be a line cut in two (a lone `\r` too: its `\n` may follow).
      buffer = lines.pop()
      for (const line of lines) {
        if (line === '') {
          if (event.id !== null) this.lastEventId = event.id
          if (event.data.length > 0) this.receive(event.type || 'message', event.data.join('\n'))
          event = { type: '', data: [], id: null }
          continue
        }
        if (line.startsWith(':')) continue
        const colon = line.indexOf(':')
        const field = colon < 0 ? line : line.slice(0, colon)
        const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
        if (field === 'event') event.type = text
        else if (field === 'data') event.data.push(text)
        else if (field === 'id' && !text.includes('\0')) event.id = text
      }
    }
  }

  receive (type, data) {
    this.failures = 0
    this.problem = null
    let body
    try {
      body = JSON.parse(data)
    } catch {
      return
    }
    const row = type === 'dropped' ? this.droppedRow(body) : this.row(type, body)
    this.rows.unshift(row)
    this.rows.length = Math.min(this.rows.length, MAX_EVENTS)
    if (this.paused) {
      this.held = Math.min(this.held + 1, MAX_EVENTS)
      this.showState()
      return
    }
    this.elements.list.prepend(row)
    this.trim()
    this.elements.note.hidden = true
  }

  /** Shows at most `shown` rows, and the button for more when there are. */
  trim () {
    const e = this.elements
    while (e.list.children.length > this.shown) e.list.lastElementChild.remove()
    // Rows past the cap are gone from `rows`: drop them from the list too.
    for (const row of [...e.list.children]) if (!this.rows.includes(row)) row.remove()
    const available = this.rows.length - this.held
    e.more.hidden = e.list.children.length >= available
    e.note.hidden = available > 0
  }

  /** Shows the rows afresh (after Clear or Show more); not for new events, which are prepended. */
  draw () {
    const e = this.elements
    e.list.replaceChildren(...this.rows.slice(this.held, this.held + this.shown))
    this.trim()
  }

  showState () {
    const e = this.elements
    let text
    if (this.paused) {
      text = this.held > 0
        ? `Paused: ${this.held} new ${this.held === 1 ? 'event is' : 'events are'} waiting. Resume to see ${this.held === 1 ? 'it' : 'them'}.`
        : 'Paused: new events wait until you resume.'
    } else if (this.connected) {
      text = 'Following your account live: events appear here as they happen.'
    } else {
      text = `Not connected${this.problem ? ` (${this.problem})` : ''}; trying again…`
    }
    if (e.state.textContent !== text) e.state.textContent = text
  }

  row (type, { timestamp, data }) {
    const [label, look] = KINDS[type] || [type, 'unknown']
    // An upload's record, or a pin's PinStatus.
    const name = data?.name ?? data?.pin?.name ?? null
    const cid = data?.cid ?? data?.pin?.cid ?? null
    const reason = data?.error?.message ?? data?.info?.reason ?? null
    return el('li', { class: 'event' },
      el('div', { class: 'event-head' },
        el('span', { class: `badge badge-${look}` }, label),
        el('time', { datetime: timestamp, class: 'muted' }, clock(timestamp)),
        el('span', { class: 'mono event-type' }, type)),
      name && el('p', { class: 'event-name' }, name),
      cid && el('p', { class: 'mono cid-text' }, cid),
      reason && el('p', { class: 'error' }, reason))
  }

  droppedRow (error) {
    return el('li', { class: 'event' },
      el('p', { class: 'error' }, `Some events were not sent to this page: ${error.message || error.error}`))
  }
}

/** `14:03:27`, and the day too when it is not today. */
function clock (rfc3339) {
  const date = new Date(rfc3339)
  if (Number.isNaN(date.getTime())) return rfc3339 || ''
  const time = date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })
  return date.toDateString() === new Date().toDateString() ? time : `${date.toLocaleDateString()} ${time}`
}
