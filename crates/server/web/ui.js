// Small pieces of presentation the other modules share: how sizes, numbers and times are
// written, copying to the clipboard, where focus goes when its row is gone, and building
// elements without innerHTML (names come from users and are only ever set as text).

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

/** The row whose button had focus is gone after a delete: focus its list's heading instead. */
export function keepFocusIn (headingId) {
  const focused = document.activeElement
  if (!focused || focused === document.body || !focused.isConnected) document.getElementById(headingId).focus()
}
