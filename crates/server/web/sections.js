// The page's management sections, each a disclosure: its heading holds a button that shows or
// hides the rest (WAI-ARIA's disclosure pattern, with the heading kept so that a screen
// reader's list of headings still finds every section). Closed by default, so the page is
// short; a section's module is told when it opens, to load what it shows then.

export class Sections {
  constructor () {
    /** Callbacks by section id, run each time it opens. */
    this.listeners = new Map()
    this.buttons = new Map()
    for (const button of document.querySelectorAll('button.disclosure')) {
      const section = button.closest('section')
      this.buttons.set(section.id, button)
      button.addEventListener('click', () => this.toggle(section.id))
    }
  }

  /** Runs `callback` whenever the section `id` opens. */
  onOpen (id, callback) {
    if (!this.listeners.has(id)) this.listeners.set(id, [])
    this.listeners.get(id).push(callback)
  }

  isOpen (id) { return this.buttons.get(id)?.getAttribute('aria-expanded') === 'true' }

  toggle (id) { return this.isOpen(id) ? this.close(id) : this.open(id) }

  open (id) {
    const button = this.buttons.get(id)
    if (!button || this.isOpen(id)) return
    button.setAttribute('aria-expanded', 'true')
    document.getElementById(button.getAttribute('aria-controls')).hidden = false
    for (const callback of this.listeners.get(id) || []) callback()
  }

  close (id) {
    const button = this.buttons.get(id)
    if (!button) return
    button.setAttribute('aria-expanded', 'false')
    document.getElementById(button.getAttribute('aria-controls')).hidden = true
  }

  /** Closes them all (signing in again starts from a short page). */
  closeAll () {
    for (const id of this.buttons.keys()) this.close(id)
  }
}
