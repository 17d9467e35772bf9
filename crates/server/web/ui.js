// Small pieces of presentation the other modules share: how sizes, numbers, times and
// key-values are written, copying to the clipboard, where focus goes when its row is gone or
// its list redrawn, lists shown a few rows at a time, and building elements without innerHTML
// (names come from users and are only ever set as text).

const UNITS = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']

/** `1.5 MiB`; whole bytes below 1 KiB. */
export function formatBytes (bytes) {
  if (!Number.isFinite(bytes)) return '?'
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024
    unit++
  }
  if (unit === 0) return `${value} ${value === 1 ? 'byte' : 'bytes'}`
  return `${value.toFixed(value < 10 ? 1 : 0)} ${UNITS[unit]}`
}

export function formatNumber (n) {
  return new Intl.NumberFormat().format(n)
}

/** A server time (RFC 3339) in the reader's locale. */
export function formatTime (rfc3339) {
  const date = new Date(rfc3339)
  if (Number.isNaN(date.getTime())) return rfc3339 || ''
  return date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
}

/**
 * An element: `el('a', {href, class: 'x'}, 'text', child)`. Attributes are set as attributes
 * (never `on*` handlers, which the page's CSP would refuse anyway); children as text or nodes.
 */
export function el (tag, attributes = {}, ...children) {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue
    element.setAttribute(name, value === true ? '' : String(value))
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue
    element.append(child instanceof Node ? child : String(child))
  }
  return element
}

/** Copies text; the Clipboard API needs a secure context, so fall back to a selection. */
export async function copyText (text) {
  try {
    await navigator.clipboard.writeText(text)
    return true
  } catch {
    const area = el('textarea', { readonly: true, class: 'visually-hidden' }, text)
    document.body.append(area)
    area.select()
    const copied = document.execCommand('copy')
    area.remove()
    return copied
  }
}

/**
 * A secret or URL shown once in a read-only `input`: selected whole when focused, copied by
 * `button`, the outcome told through `announce` (`what` names it: "Key", "Link", ...).
 */
export function offerCopy (input, button, what, announce) {
  input.addEventListener('focus', () => input.select())
  button.addEventListener('click', async () => {
    const copied = await copyText(input.value)
    announce(copied ? `${what} copied` : `Could not copy: select the ${what.toLowerCase()} and copy it`)
  })
}

/** The row whose button had focus is gone after a delete: focus its list's heading instead. */
export function keepFocusIn (headingId) {
  const focused = document.activeElement
  if (!focused || focused === document.body || !focused.isConnected) document.getElementById(headingId).focus()
}

/** A definition list of `[term, value]` pairs (falsy pairs left out), as the records show facts. */
export function facts (pairs, className = 'key-facts') {
  return el('dl', { class: className }, pairs.filter(Boolean).flatMap(([term, value]) => [el('dt', {}, term), el('dd', {}, value)]))
}

/** `user=42, kind=avatar`; `null` for none. */
export function formatKeyValues (keyvalues) {
  const pairs = Object.entries(keyvalues || {})
  return pairs.length === 0 ? null : pairs.map(([key, value]) => `${key}=${value}`).join(', ')
}

/**
 * Replaces a list's rows, keeping focus where it was: a control inside a row marked
 * `data-key` with a `data-action` gets focus back in the new row with the same key (a list
 * redrawn under the keyboard would otherwise drop focus to the page's top).
 */
export function replaceRows (list, rows) {
  const focused = document.activeElement
  const row = focused && list.contains(focused) ? focused.closest('[data-key]') : null
  const action = focused?.dataset?.action
  list.replaceChildren(...rows)
  if (!row) return
  const again = [...list.querySelectorAll('[data-key]')].find(item => item.dataset.key === row.dataset.key)
  const target = again && (action ? again.querySelector(`[data-action="${action}"]`) : null)
  if (target) target.focus()
  else if (again) focusRow(again)
}

/** Moves focus to a list item (made focusable for it), for a reader to go on from there. */
export function focusRow (row) {
  if (!row.hasAttribute('tabindex')) row.setAttribute('tabindex', '-1')
  row.focus()
}

/**
 * A list shown a few rows at a time, with a "Show more" button after it: the page stays short
 * however many there are. `render(rows)` shows as many rows as were shown before (at least
 * `step`); the button shows `step` more and moves focus to the first of them.
 */
export class ListPager {
  /**
   * @param {HTMLElement} list
   * @param {HTMLButtonElement} button
   * @param {{step?: number, noun?: string, announce?: (text: string) => void}} [options]
   */
  constructor (list, button, { step = 5, noun = 'items', announce = () => {} } = {}) {
    this.list = list
    this.button = button
    this.step = step
    this.noun = noun
    this.announce = announce
    this.rows = []
    this.shown = step
    button.addEventListener('click', () => {
      const first = this.shown
      this.shown += this.step
      this.draw()
      const row = this.list.children[first]
      if (row) focusRow(row)
      this.announce(`Showing ${Math.min(this.shown, this.rows.length)} of ${this.rows.length} ${this.noun}`)
    })
  }

  render (rows) {
    this.rows = rows
    this.draw()
  }

  draw () {
    replaceRows(this.list, this.rows.slice(0, this.shown))
    const more = this.rows.length - this.shown
    this.button.hidden = more <= 0
    this.button.textContent = `Show ${Math.min(more, this.step)} more ${this.noun}`
  }
}

/** `button`, with `aria-describedby` naming the row it acts on, calling `onClick`. */
export function rowButton (text, describedBy, onClick, { className = null, action = null } = {}) {
  const button = el('button', { type: 'button', class: className, 'aria-describedby': describedBy, 'data-action': action }, text)
  button.addEventListener('click', onClick)
  return button
}
