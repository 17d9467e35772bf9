// Key-values (an upload's or a link's tags, to find uploads again by): an editor of key and
// value rows that says what is wrong with them before the server would (at most 16 pairs,
// keys of 1 to 64 bytes, values of at most 256), and the reading of a `key=value` filter.

import { el } from './ui.js'

export const MAX_PAIRS = 16
const MAX_KEY_BYTES = 64
const MAX_VALUE_BYTES = 256

const bytes = text => new TextEncoder().encode(text).length

/**
 * A `key=value` filter as `{key: value}`: split at the first `=` (a value may hold more).
 * Empty text is no filter; `{problem}` when it is not a pair.
 */
export function parseFilter (text) {
  const trimmed = text.trim()
  if (!trimmed) return { keyvalues: {} }
  const at = trimmed.indexOf('=')
  if (at <= 0) return { problem: 'Write the key-value to find as key=value, such as user=42.' }
  const key = trimmed.slice(0, at).trim()
  // The server reads `kv=key:value` up to the first `:`: a key with one cannot be asked for.
  if (key.includes(':')) return { problem: 'A key with a colon (:) cannot be searched for.' }
  return { keyvalues: { [key]: trimmed.slice(at + 1).trim() } }
}

/** Rows of key and value inputs in a fieldset, with buttons to add and remove rows. */
export class KeyValueEditor {
  /**
   * @param {object} options
   * @param {string} options.idPrefix  unique on the page: the inputs' ids start with it
   * @param {string} [options.legend]
   * @param {string} [options.hint]
   * @param {Record<string, string>} [options.pairs]  the rows to start with
   */
  constructor ({ idPrefix, legend = 'Key-values', hint = '', pairs = {} }) {
    this.idPrefix = idPrefix
    this.rowCount = 0
    const hintId = `${idPrefix}-hint`
    this.rows = el('ul', { class: 'kv-rows plain-list' })
    this.add = el('button', { type: 'button', 'aria-describedby': hint ? hintId : null }, 'Add a key-value')
    this.add.addEventListener('click', () => {
      if (this.rows.children.length >= MAX_PAIRS) return
      this.addRow('', '').querySelector('input').focus()
    })
    this.element = el('fieldset', { class: 'kv-editor' },
      el('legend', {}, legend),
      hint && el('p', { id: hintId, class: 'hint' }, hint),
      this.rows,
      this.add)
    this.set(pairs)
  }

  /** Replaces the rows with `pairs`. */
  set (pairs) {
    this.rows.replaceChildren()
    for (const [key, value] of Object.entries(pairs)) this.addRow(key, value)
    this.updateAdd()
  }

  addRow (key, value) {
    const n = ++this.rowCount
    const keyId = `${this.idPrefix}-key-${n}`
    const valueId = `${this.idPrefix}-value-${n}`
    const keyInput = el('input', { id: keyId, class: 'kv-key', autocomplete: 'off', spellcheck: 'false', maxlength: MAX_KEY_BYTES })
    keyInput.value = key
    const valueInput = el('input', { id: valueId, class: 'kv-value', autocomplete: 'off', spellcheck: 'false', maxlength: MAX_VALUE_BYTES })
    valueInput.value = value
    const remove = el('button', { type: 'button', class: 'danger' }, 'Remove')
    const row = el('li', { class: 'kv-row' },
      el('div', { class: 'field' }, el('label', { for: keyId }, 'Key'), keyInput),
      el('div', { class: 'field' }, el('label', { for: valueId }, 'Value'), valueInput),
      remove)
    remove.addEventListener('click', () => {
      // Focus goes to the row that takes its place, or to the button that adds one.
      const next = row.nextElementSibling || row.previousElementSibling
      row.remove()
      this.renumber()
      this.updateAdd()
      ;(next ? next.querySelector('input') : this.add).focus()
    })
    this.rows.append(row)
    this.renumber()
    this.updateAdd()
    return row
  }

  /** Each row's inputs and button say which row they are (“Key 2”, “Remove key-value 2”). */
  renumber () {
    [...this.rows.children].forEach((row, i) => {
      const [keyLabel, valueLabel] = row.querySelectorAll('label')
      keyLabel.replaceChildren('Key', el('span', { class: 'visually-hidden' }, ` ${i + 1}`))
      valueLabel.replaceChildren('Value', el('span', { class: 'visually-hidden' }, ` ${i + 1}`))
      row.querySelector('button').setAttribute('aria-label', `Remove key-value ${i + 1}`)
    })
  }

  updateAdd () {
    this.add.disabled = this.rows.children.length >= MAX_PAIRS
  }

  /** The rows as `{pairs}`, or the first problem with them and the input to fix. */
  read () {
    const pairs = {}
    for (const row of this.rows.children) {
      const keyInput = row.querySelector('.kv-key')
      const valueInput = row.querySelector('.kv-value')
      const key = keyInput.value.trim()
      const value = valueInput.value
      if (!key && !value) continue
      if (!key) return { problem: 'Give each value a key.', field: keyInput }
      if (bytes(key) > MAX_KEY_BYTES) return { problem: `A key is at most ${MAX_KEY_BYTES} bytes.`, field: keyInput }
      if (bytes(value) > MAX_VALUE_BYTES) return { problem: `A value is at most ${MAX_VALUE_BYTES} bytes.`, field: valueInput }
      if (key in pairs) return { problem: `The key “${key}” is there twice.`, field: keyInput }
      pairs[key] = value
    }
    return { pairs }
  }

  /** What to send to change `original` into the rows: new and changed keys, `null` for removed ones. */
  changesFrom (original) {
    const { pairs, problem, field } = this.read()
    if (problem) return { problem, field }
    const changes = {}
    for (const key of Object.keys(original)) if (!(key in pairs)) changes[key] = null
    for (const [key, value] of Object.entries(pairs)) if (original[key] !== value) changes[key] = value
    return { changes }
  }
}
