// The page's entry point: reads the deployment's settings, signs in with a token, and wires
// the upload controls (drop zone, pickers, archive switch, unfinished uploads) to the transfer
// queue (uploads.js), and the collapsible sections (sections.js) to what each manages: the
// account's uploads, pins and storage (manage.js), its live events (events.js), names
// (names.js), upload links (links.js), keys (keys.js) and webhooks (webhooks.js).

import { Api, webConfig } from './api.js'
import { LiveEvents } from './events.js'
import { foldersFromPicker, itemsFromDrop } from './files.js'
import { Keys } from './keys.js'
import { Links } from './links.js'
import { Library } from './manage.js'
import { Names } from './names.js'
import { Sections } from './sections.js'
import { TusUpload } from './tus.js'
import { Queue, resumeStore } from './uploads.js'
import { el, formatBytes, formatTime } from './ui.js'
import { Webhooks } from './webhooks.js'

const TOKEN_KEY = 'cairn.token'
const $ = id => document.getElementById(id)

/** What the page knows once signed in. */
const session = { config: null, api: null, limit: 0 }

function announce (text) {
  const announcer = $('announcer')
  // Cleared first so the same words said twice are announced twice.
  announcer.textContent = ''
  setTimeout(() => { announcer.textContent = text }, 50)
}

/** A `<dialog>` question; resolves true when the action button is chosen. */
function confirm ({ title, text, action }) {
  const dialog = $('confirm')
  $('confirm-title').textContent = title
  $('confirm-text').textContent = text
  $('confirm-ok').textContent = action
  const opener = document.activeElement
  return new Promise(resolve => {
    const finish = answer => {
      dialog.removeEventListener('close', onClose)
      $('confirm-ok').removeEventListener('click', onOk)
      $('confirm-cancel').removeEventListener('click', onCancel)
      if (dialog.open) dialog.close()
      // Focus goes back where it was (the row may be gone after a delete: then to the list).
      if (opener?.isConnected) opener.focus()
      resolve(answer)
    }
    const onClose = () => finish(false) // Escape
    const onOk = () => finish(true)
    const onCancel = () => finish(false)
    dialog.addEventListener('close', onClose)
    $('confirm-ok').addEventListener('click', onOk)
    $('confirm-cancel').addEventListener('click', onCancel)
    dialog.showModal()
  })
}

function showPageError (text) {
  $('page-error').textContent = text
  $('page-error').hidden = !text
}

function storedToken () {
  return sessionStorage.getItem(TOKEN_KEY) || localStorage.getItem(TOKEN_KEY)
}

function storeToken (token, remember) {
  sessionStorage.removeItem(TOKEN_KEY)
  localStorage.removeItem(TOKEN_KEY)
  ;(remember ? localStorage : sessionStorage).setItem(TOKEN_KEY, token)
}

/**
 * Checks the token with GET /api/upload-limit; on success shows the workspace.
 * Returns null, or why not: `{message, rejected}` (rejected: the server refused the token).
 */
async function signIn (token) {
  const api = new Api(token, session.config)
  let limits
  try {
    limits = await api.uploadLimit()
  } catch (error) {
    if (error.status === 401) {
      return { rejected: true, message: 'That token was not accepted. Check that you pasted all of it and that it has not been revoked.' }
    }
    return { rejected: false, message: `Could not sign in: ${error.message}` }
  }
  session.api = api
  session.limit = limits.limit
  $('sign-in').hidden = true
  $('workspace').hidden = false
  $('account').hidden = false
  $('signed-in-as').textContent = `Signed in as ${limits.account}`
  // The quota shows on the closed Storage section; the rest loads when its section opens.
  library.refreshQuota(limits)
  renderUnfinished()
  return null
}

function showSignIn (message = '') {
  $('workspace').hidden = true
  $('account').hidden = true
  $('sign-in').hidden = false
  $('sign-in-error').textContent = message
}

/** Forgets the token and starts a fresh page, which drops everything the token opened. */
function signOut () {
  sessionStorage.removeItem(TOKEN_KEY)
  localStorage.removeItem(TOKEN_KEY)
  // Unfinished TUS uploads stay remembered, to resume after signing in again.
  location.reload()
}

const sections = new Sections()

const library = new Library({ api: () => session.api, announce, confirm })

const events = new LiveEvents({ api: () => session.api, announce })

const links = new Links({ api: () => session.api, announce, confirm })

const webhooks = new Webhooks({ api: () => session.api, announce, confirm })

// Each section loads what it shows when it opens, afresh each time. The event stream, once
// opened, is followed until the page is left.
sections.onOpen('library', () => { library.refreshUploads(); library.refreshPins() })
sections.onOpen('storage', () => library.refreshQuota())
sections.onOpen('events', () => events.start())
sections.onOpen('names', () => names.refresh())
sections.onOpen('links', () => links.refresh())
sections.onOpen('keys', () => keys.refresh())
sections.onOpen('webhooks', () => webhooks.refresh())

const names = new Names({ api: () => session.api, announce })

// Revoking the key the page is signed in with leaves it nothing to work with.
const keys = new Keys({ api: () => session.api, announce, confirm, onOwnKeyRevoked: signOut })

const queue = new Queue({
  api: () => session.api,
  limit: () => session.limit,
  list: $('transfers'),
  template: $('transfer-template'),
  announce,
  onStored: () => library.refreshAll(),
  onSettled: () => renderUnfinished()
})

function archiveMode () {
  return document.querySelector('input[name="archive-mode"]:checked')?.value || 'extract'
}

/** Lists uploads this browser started over TUS and did not finish, with what the server holds. */
function renderUnfinished () {
  const active = queue.activeFingerprints()
  const entries = Object.entries(resumeStore.all()).filter(([fingerprint]) => !active.has(fingerprint))
  $('unfinished').hidden = entries.length === 0
  $('unfinished-list').replaceChildren(...entries.map(([fingerprint, entry]) => {
    const sent = el('span', { class: 'muted' }, `${formatBytes(entry.size)}, started ${formatTime(new Date(entry.savedAt).toISOString())}`)
    const discard = el('button', { type: 'button', class: 'danger' }, 'Discard')
    discard.setAttribute('aria-label', `Discard ${entry.name}`)
    discard.addEventListener('click', async () => {
      const yes = await confirm({
        title: `Discard the unfinished upload of “${entry.name}”?`,
        text: 'What the server received of it is deleted; choosing the file again then starts from the beginning.',
        action: 'Discard'
      })
      if (!yes) return
      const upload = new TusUpload({ endpoint: entry.url, token: session.api.token, blob: new Blob(), metadata: {}, url: entry.url })
      await upload.cancel().catch(() => {})
      resumeStore.remove(fingerprint)
      announce(`Discarded ${entry.name}`)
      renderUnfinished()
    })
    const item = el('li', { class: 'unfinished-item' }, el('strong', {}, entry.name), ' ', sent, ' ', discard)
    // What the server has of it. 410: terminated or expired, forgotten. 404: deleted, or
    // another account's (this browser may have been used with another token): not shown.
    new TusUpload({ endpoint: entry.url, token: session.api.token, blob: new Blob(), metadata: {}, url: entry.url })
      .head()
      .then(offset => { sent.textContent = `${formatBytes(offset)} of ${formatBytes(entry.size)} on the server` })
      .catch(error => {
        if (error.status === 410) {
          resumeStore.remove(fingerprint)
          renderUnfinished()
        } else if (error.status === 404) {
          item.remove()
          $('unfinished').hidden = $('unfinished-list').children.length === 0
        }
      })
    return item
  }))
}

function addItems (items) {
  const mode = archiveMode()
  for (const item of items) {
    if (item.kind === 'folder') queue.addFolder(item)
    else queue.addFile(item.file, mode)
  }
  renderUnfinished()
}

function wireUploads () {
  const fileInput = $('file-input')
  fileInput.addEventListener('change', () => {
    addItems([...fileInput.files].map(file => ({ kind: 'file', file })))
    // Cleared so that choosing the same file again (to resume it) fires `change` again.
    fileInput.value = ''
  })
  const folderInput = $('folder-input')
  folderInput.addEventListener('change', () => {
    addItems(foldersFromPicker(folderInput.files))
    folderInput.value = ''
  })

  const zone = $('drop-zone')
  // A file dropped outside the zone would make the browser navigate away to it.
  for (const type of ['dragover', 'drop']) window.addEventListener(type, event => event.preventDefault())
  zone.addEventListener('dragover', event => {
    event.preventDefault()
    event.dataTransfer.dropEffect = 'copy'
    zone.classList.add('dragging')
  })
  zone.addEventListener('dragleave', event => {
    if (!zone.contains(event.relatedTarget)) zone.classList.remove('dragging')
  })
  zone.addEventListener('drop', async event => {
    event.preventDefault()
    zone.classList.remove('dragging')
    if (!session.api) return
    try {
      addItems(await itemsFromDrop(event.dataTransfer))
    } catch (error) {
      announce(`Could not read what was dropped: ${error.message}`)
    }
  })
}

function wireSignIn () {
  $('sign-in-form').addEventListener('submit', async event => {
    event.preventDefault()
    const token = $('token').value.trim()
    if (!token) {
      $('sign-in-error').textContent = 'Paste a token first.'
      $('token').focus()
      return
    }
    $('sign-in-error').textContent = ''
    const button = event.submitter
    if (button) button.disabled = true
    const error = await signIn(token)
    if (button) button.disabled = false
    if (error) {
      $('sign-in-error').textContent = error.message
      $('token').focus()
      return
    }
    storeToken(token, $('remember').checked)
    $('token').value = ''
    announce('Signed in')
    $('upload-title').focus()
  })
  $('sign-out').addEventListener('click', async () => {
    const running = queue.activeFingerprints().size
    if (running > 0 && !await confirm({
      title: 'Sign out while uploads are running?',
      text: 'They stop now. Large ones resume where they stopped when you sign in again and choose the same files.',
      action: 'Sign out'
    })) return
    signOut()
  })
}

async function start () {
  wireSignIn()
  wireUploads()
  try {
    session.config = await webConfig()
  } catch (error) {
    showPageError(`The page cannot start: ${error.message}`)
    return
  }
  const token = storedToken()
  if (!token) return showSignIn()
  const error = await signIn(token)
  if (error?.rejected) {
    sessionStorage.removeItem(TOKEN_KEY)
    localStorage.removeItem(TOKEN_KEY)
    showSignIn('The saved token is no longer accepted. Sign in again.')
  } else if (error) {
    // The server could not be reached: keep the token, to try again on the next load.
    showSignIn(error.message)
  }
}

start()
