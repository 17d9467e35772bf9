// The web page's browser tests: drives the machine's Chromium with playwright-core through one
// scenario against a running `cairn serve`, the way a person would, finding everything by its
// accessible role and label (so the page's labelling is tested too). Run by
// crates/cairn/tests/web_page.rs.
//
// Usage: node browser.mjs SCENARIO
//   SCENARIO: wrong-token | small | big | folder | drop | archive | resume | delete | pin |
//   keys | keys-forbidden | isolation | stream | stream-cut | eventsource | usage | names | docs
// Environment: CAIRN_PAGE_URL (the account host), CAIRN_TOKEN, CAIRN_FIXTURES (small.txt,
// big.bin, folder/, site.tar.gz), CAIRN_SCREENSHOTS (where <scenario>.png goes, or
// <CAIRN_SCREENSHOT_NAME>.png; `keys` adds keys-secret-shown.png), CHROMIUM (the browser),
// CAIRN_PIN_CID (for `pin`), CAIRN_DROP_DIR (for `drop`: the folder to drop, by default
// CAIRN_FIXTURES/folder; give one with empty folders, which only a drop keeps),
// CAIRN_UPLOAD_URL (the upload host), CAIRN_VICTIM_CID and CAIRN_THIEF_CID (for `isolation`),
// CAIRN_ARCHIVE (for `stream`, `stream-cut` and `eventsource`: a tar that takes the server a
// few seconds to extract), CAIRN_NO_READ_TOKEN (for `usage`: a key without the `read` scope),
// CAIRN_NAME, CAIRN_FIRST_CID and CAIRN_SECOND_CID (for `names`: a name labelled `site`,
// pointing at the first, to be pointed at the second).
// On success prints one JSON line, {"scenario": ..., "cid": ...}; on failure a message on
// stderr and a non-zero exit. Either way a full-page screenshot is saved.

import { chromium } from 'playwright-core'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const TIMEOUT_MS = 60_000
const scenario = process.argv[2]

function env (name) {
  const value = process.env[name]
  if (!value) throw new Error(`${name} is not set`)
  return value
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/** Waits until `check()` returns something other than undefined, or fails saying `what`. */
async function until (what, check, timeoutMs = TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`)
    await sleep(100)
  }
}

async function signIn (page, { keyboard = false } = {}) {
  await page.goto(env('CAIRN_PAGE_URL'))
  await page.getByLabel('API token').fill(env('CAIRN_TOKEN'))
  if (keyboard) await page.getByLabel('API token').press('Enter')
  else await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('button', { name: 'Sign out' }).waitFor()
  await page.getByRole('heading', { name: 'Upload', exact: true }).waitFor()
}

/** The list item of a transfer, by the name it shows. */
function transfer (page, name) {
  return page.getByRole('list', { name: 'Transfers' }).getByRole('listitem', { name, exact: true }).first()
}

/** Waits for a transfer's CID; fails with the page's own message if the transfer fails. */
async function cidOf (item, name) {
  await item.waitFor()
  return until(`the CID of ${name}`, async () => {
    const status = (await item.getByRole('status').textContent()) || ''
    if (/^(Failed|Cancelled)/.test(status)) throw new Error(`${name}: ${status}`)
    const cid = item.getByLabel('CID', { exact: true })
    if (await cid.isVisible()) {
      const value = await cid.inputValue()
      if (value) return value
    }
    return undefined
  })
}

async function upload (page, fixture) {
  await page.getByLabel('Choose files').setInputFiles(fixture)
  return cidOf(transfer(page, path.basename(fixture)), path.basename(fixture))
}

/** Checks that the page's progress bar and text for `item` say everything was sent. */
async function assertProgressComplete (item) {
  const bar = item.getByRole('progressbar', { name: 'Upload progress' })
  const [value, max] = await bar.evaluate(el => [el.value, el.max])
  if (value !== max) throw new Error(`the progress bar stopped at ${value} of ${max}`)
  const text = await item.getByText(/ of .*\(\d+%\)/).textContent()
  if (!text.includes('(100%)')) throw new Error(`the progress text says ${text}`)
}

const scenarios = {
  async 'wrong-token' (page) {
    await page.goto(env('CAIRN_PAGE_URL'))
    await page.getByLabel('API token').fill('cairn_this-token-does-not-exist')
    await page.getByRole('button', { name: 'Sign in' }).click()
    const alert = page.getByRole('alert').filter({ hasText: 'not accepted' })
    await alert.waitFor()
    if (await page.getByRole('button', { name: 'Sign out' }).isVisible()) throw new Error('signed in with a wrong token')
    if (await page.getByRole('heading', { name: 'Upload', exact: true }).isVisible()) throw new Error('the upload controls show without a valid token')
    return { message: await alert.textContent() }
  },

  async small (page) {
    // A phone-sized screen: everything must fit without scrolling sideways.
    await page.setViewportSize({ width: 375, height: 800 })
    await signIn(page, { keyboard: true })
    const cid = await upload(page, path.join(env('CAIRN_FIXTURES'), 'small.txt'))
    const item = transfer(page, 'small.txt')
    const href = name => item.getByRole('link', { name, exact: true }).getAttribute('href')
    const gateway = await href('Path gateway')
    if (!gateway.endsWith(`/ipfs/${cid}`)) throw new Error(`the path gateway link is ${gateway}`)
    if (await href('IPFS link') !== `ipfs://${cid}`) throw new Error(`the ipfs:// link is ${await href('IPFS link')}`)
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
    if (overflow > 0) throw new Error(`the page is ${overflow} px wider than a 375 px screen`)
    return { cid }
  },

  async big (page) {
    await signIn(page)
    let patches = 0
    page.on('request', request => { if (request.method() === 'PATCH') patches++ })
    const cid = await upload(page, path.join(env('CAIRN_FIXTURES'), 'big.bin'))
    await assertProgressComplete(transfer(page, 'big.bin'))
    if (patches < 2) throw new Error(`big.bin went in ${patches} PATCH requests: not over TUS in chunks`)
    return { cid, patches }
  },

  async folder (page) {
    await signIn(page)
    // Chromium's folder picker: Playwright hands it a directory for a webkitdirectory input.
    await page.getByLabel('Choose a folder').setInputFiles(path.join(env('CAIRN_FIXTURES'), 'folder'))
    const cid = await cidOf(transfer(page, 'folder'), 'folder')
    return { cid }
  },

  async drop (page) {
    await signIn(page)
    // A real drop of a folder from disk, as the OS would deliver it: Chromium's DevTools
    // protocol drags file paths, and the page walks them with webkitGetAsEntry (unlike the
    // picker, this keeps empty folders).
    const dir = process.env.CAIRN_DROP_DIR || path.join(env('CAIRN_FIXTURES'), 'folder')
    const box = await page.getByText('Drop files or folders here').boundingBox()
    const at = { x: box.x + box.width / 2, y: box.y + box.height / 2 }
    const cdp = await page.context().newCDPSession(page)
    const data = { items: [], files: [dir], dragOperationsMask: 1 }
    for (const type of ['dragEnter', 'dragOver', 'drop']) await cdp.send('Input.dispatchDragEvent', { type, ...at, data })
    const name = path.basename(dir)
    const cid = await cidOf(transfer(page, name), name)
    return { cid, dir }
  },

  async archive (page) {
    await signIn(page)
    await page.getByRole('radio', { name: /^Extract/ }).check()
    const cid = await upload(page, path.join(env('CAIRN_FIXTURES'), 'site.tar.gz'))
    return { cid }
  },

  async resume (page) {
    await signIn(page)
    const big = path.join(env('CAIRN_FIXTURES'), 'big.bin')
    // Let two chunks through, then hold the next one: the server has what it acknowledged.
    let acknowledged = 0
    let holding = true
    let held = false
    page.on('response', response => {
      if (response.request().method() === 'PATCH' && response.status() === 204) acknowledged++
    })
    const isTus = url => new URL(url).pathname.startsWith('/api/upload/tus/')
    await page.route(isTus, route => {
      if (holding && route.request().method() === 'PATCH' && acknowledged >= 2) {
        held = true
        return // never answered: the chunk hangs, as over a dead connection
      }
      return route.continue()
    })
    await page.getByLabel('Choose files').setInputFiles(big)
    await until('two acknowledged chunks and a held third', async () => (held ? true : undefined))
    // The reload abandons the held chunk (it never reached the server); what the new page
    // sends goes through.
    holding = false
    await page.reload()
    await page.getByRole('button', { name: 'Sign out' }).waitFor()
    await page.unrouteAll({ behavior: 'ignoreErrors' })
    // The page remembers the unfinished upload; choosing the file again resumes it.
    await page.getByRole('list', { name: 'Unfinished uploads' }).getByText('big.bin').waitFor()
    await page.getByLabel('Choose files').setInputFiles(big)
    const item = transfer(page, 'big.bin')
    const resumed = await item.getByText(/^Resumed at/).textContent()
    const resumedAt = Number(/\((\d+) bytes were already on the server\)/.exec(resumed)?.[1])
    if (!(resumedAt > 0)) throw new Error(`expected to resume past 0, the page says: ${resumed}`)
    const cid = await cidOf(item, 'big.bin')
    await assertProgressComplete(item)
    return { cid, resumedAt }
  },

  async delete (page) {
    await signIn(page)
    const cid = await upload(page, path.join(env('CAIRN_FIXTURES'), 'small.txt'))
    const uploads = page.getByRole('list', { name: 'Uploads', exact: true })
    // Newest first: the first small.txt showing this CID is the one just uploaded.
    const row = uploads.getByRole('listitem', { name: 'small.txt', exact: true }).filter({ hasText: cid }).first()
    await row.waitFor()
    const id = /\bid (\S+)/.exec(await row.innerText())?.[1]
    if (!id) throw new Error('the upload shows no id')
    const shown = uploads.getByText(`id ${id}`, { exact: true })
    await shown.waitFor()
    await row.getByRole('button', { name: 'Delete' }).click()
    const dialog = page.getByRole('dialog')
    await dialog.waitFor()
    await dialog.getByRole('button', { name: 'Delete' }).click()
    await shown.waitFor({ state: 'detached' })
    return { cid, deleted: id }
  },

  async pin (page) {
    await signIn(page)
    const cid = env('CAIRN_PIN_CID')
    const name = `browser pin ${Date.now()}`
    await page.getByLabel('CID to pin').fill(cid)
    await page.getByLabel('Name (optional)').fill(name)
    await page.getByRole('button', { name: 'Pin', exact: true }).click()
    const pins = page.getByRole('list', { name: 'Pins', exact: true })
    const row = pins.getByRole('listitem', { name, exact: true })
    await row.waitFor()
    await until(`the pin "${name}" to be pinned`, async () => {
      const text = (await row.textContent()) || ''
      if (/failed/.test(text)) throw new Error(`the pin failed: ${text}`)
      return text.includes('pinned') && text.includes(cid) ? true : undefined
    })
    return { cid }
  },

  // A key made on the page: upload and read only, expiring in a day, at most 5 uploads of at
  // most 1 MiB. Its secret is shown once (and copied with the button), works for what its
  // scopes allow and nothing else, is listed, is nowhere in the page once hidden or after a
  // reload, and stops working when revoked. Then the page's own key is revoked: signed out. Returns the secret, the record as the API listed it
  // and the lifetime it gives the key, for the test to check again from outside.
  async keys (page) {
    const pageUrl = env('CAIRN_PAGE_URL')
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(pageUrl).origin })
    await signIn(page)
    const section = page.getByRole('region', { name: 'API keys' })
    const keysList = section.getByRole('list', { name: 'Your keys' })
    // The key the page signed in with is listed, and said to be the page's own.
    const own = keysList.getByRole('listitem').filter({ hasText: 'This page is signed in with this key.' })
    await own.waitFor()
    if (!(await own.innerText()).includes(`${env('CAIRN_TOKEN').slice(0, 14)}…`)) throw new Error('the page marks another key as its own')

    const form = section.getByRole('form', { name: 'Create a key' })
    // Without a scope, the page asks for one rather than sending the request.
    await form.getByRole('button', { name: 'Create key' }).click()
    await form.getByRole('alert').filter({ hasText: 'Choose at least one scope.' }).waitFor()

    const name = `browser key ${Date.now()}`
    await form.getByLabel('Name', { exact: true }).fill(name)
    await form.getByRole('checkbox', { name: 'upload', exact: true }).check()
    await form.getByRole('checkbox', { name: 'read', exact: true }).check()
    await form.getByLabel('Expires').selectOption({ label: 'In 1 day' })
    await form.getByText('More limits (optional)').click()
    await form.getByLabel('Most uploads', { exact: true }).fill('5')
    await form.getByLabel('Largest upload', { exact: true }).fill('1')
    await form.getByLabel('Unit of the largest upload').selectOption({ label: 'MiB' })
    await form.getByRole('button', { name: 'Create key' }).click()

    const shown = section.getByRole('region', { name: `Your new key “${name}”` })
    await shown.waitFor()
    const secret = await shown.getByLabel('Secret key').inputValue()
    if (!/^cairn_[0-9a-f]{64}$/.test(secret)) throw new Error(`the page shows ${JSON.stringify(secret)} as the new key`)
    await shown.getByText('it will not be shown again').waitFor()
    await page.screenshot({ path: path.join(env('CAIRN_SCREENSHOTS'), 'keys-secret-shown.png'), fullPage: true })
    if (await form.getByLabel('Name', { exact: true }).inputValue() !== '') throw new Error('the form was not cleared after making the key')
    await shown.getByRole('button', { name: 'Copy key' }).click()
    await until('the clipboard to hold the new key', async () =>
      (await page.evaluate(() => navigator.clipboard.readText())) === secret ? true : undefined)

    // It works, for its scopes alone: the upload limit (upload or read) but not the keys.
    const withSecret = url => fetch(`${pageUrl}${url}`, { headers: { Authorization: `Bearer ${secret}` } })
    const live = await withSecret('/api/upload-limit')
    if (live.status !== 200) throw new Error(`the new key got ${live.status} for /api/upload-limit: ${await live.text()}`)
    const keysWithSecret = await withSecret('/api/keys')
    if (keysWithSecret.status !== 403) throw new Error(`a key without the keys scope got ${keysWithSecret.status} for /api/keys`)

    const row = keysList.getByRole('listitem', { name, exact: true })
    await row.waitFor()
    const text = await row.innerText()
    for (const expected of [`${secret.slice(0, 14)}…`, 'upload, read', 'active', '0 of 5', '1.0 MiB']) {
      if (!text.includes(expected)) throw new Error(`the key's row does not say ${JSON.stringify(expected)}: ${text}`)
    }
    if (/Expires\s+Never/.test(text)) throw new Error(`the key's row says it never expires: ${text}`)
    const listed = await fetch(`${pageUrl}/api/keys`, { headers: { Authorization: `Bearer ${env('CAIRN_TOKEN')}` } })
    const record = (await listed.json()).keys.find(key => key.name === name)
    if (!record) throw new Error('the API does not list the key made on the page')

    // Shown once: hidden, the secret is nowhere in the page; nor after a reload.
    const secretInPage = () => page.evaluate(secret =>
      document.documentElement.outerHTML.includes(secret) ||
      [...document.querySelectorAll('input, textarea')].some(input => input.value.includes(secret)) ||
      Object.values(sessionStorage).concat(Object.values(localStorage)).some(value => value.includes(secret)), secret)
    await shown.getByRole('button', { name: /hide the key/ }).click()
    await shown.waitFor({ state: 'hidden' })
    if (await secretInPage()) throw new Error('the secret is still in the page once hidden')
    await page.reload()
    await row.waitFor()
    if (await shown.isVisible()) throw new Error('the new key is shown again after a reload')
    if (await secretInPage()) throw new Error('the secret is in the page after a reload')

    await row.getByRole('button', { name: 'Revoke' }).click()
    const dialog = page.getByRole('dialog')
    await dialog.waitFor()
    await dialog.getByRole('button', { name: 'Revoke' }).click()
    await row.waitFor({ state: 'detached' })
    const revoked = await withSecret('/api/upload-limit')
    if (revoked.status !== 401) throw new Error(`the revoked key got ${revoked.status} for /api/upload-limit`)
    // The page's own key is untouched: still signed in, still listed. Revoking it too, after a
    // warning, signs the page out.
    await page.getByRole('button', { name: 'Sign out' }).waitFor()
    await own.getByRole('button', { name: 'Revoke' }).click()
    await dialog.getByText('revoking it signs you out here').waitFor()
    await dialog.getByRole('button', { name: 'Revoke' }).click()
    await page.getByLabel('API token').waitFor()
    if (await page.evaluate(() => sessionStorage.length + localStorage.length) !== 0) throw new Error('the revoked token is still remembered')
    const lifetimeSeconds = (Date.parse(record.expiresAt) - Date.parse(record.createdAt)) / 1000
    return { secret, record, lifetimeSeconds }
  },

  // Signed in with a key that lacks the `keys` scope: the keys section says why, with the
  // server's message, and offers nothing that would fail; the rest of the page works.
  async 'keys-forbidden' (page) {
    await signIn(page)
    const section = page.getByRole('region', { name: 'API keys' })
    const notice = section.getByText('cannot manage keys')
    await notice.waitFor()
    if (await section.getByRole('form', { name: 'Create a key' }).isVisible()) throw new Error('the form to make a key shows to a key that may not')
    if (await section.getByRole('list', { name: 'Your keys' }).isVisible()) throw new Error('the list of keys shows to a key that may not read it')
    await page.getByText('No uploads yet.').waitFor()
    const cid = await upload(page, path.join(env('CAIRN_FIXTURES'), 'small.txt'))
    return { message: await notice.textContent(), cid }
  },

  // An archive followed live: once the upload is stored, the page follows its operation's
  // event stream, showing each stage the stream reports, then the CID. Returns what the
  // transfer said, in order, and the page's requests about the operation.
  async stream (page) {
    await signIn(page)
    await page.getByRole('radio', { name: /^Extract/ }).check()
    const requests = operationRequests(page)
    await recordTransferTexts(page)
    const cid = await upload(page, env('CAIRN_ARCHIVE'))
    return { cid, shown: await page.evaluate(() => window.shown), ...requests }
  },

  // The same through a proxy that cuts every event stream at once (an empty answer): the
  // page gives the stream up and asks about the operation instead, and still gets the CID.
  async 'stream-cut' (page) {
    await signIn(page)
    await page.getByRole('radio', { name: /^Extract/ }).check()
    const requests = operationRequests(page)
    await page.route(url => url.pathname.endsWith('/events'), route =>
      route.fulfill({ status: 200, contentType: 'text/event-stream', body: '' }))
    await recordTransferTexts(page)
    const cid = await upload(page, env('CAIRN_ARCHIVE'))
    return { cid, shown: await page.evaluate(() => window.shown), ...requests }
  },

  // Chromium's own EventSource, in a page of the account host (under the page's CSP), follows
  // an archive sent over TUS in two parts: the first half is sent, the stream opened, and once
  // it has said `receiving` the second half goes; then the stream reports processing and
  // the end. It is left open after the final event to reconnect once (with Last-Event-ID):
  // nothing is sent twice. Returns every event and the stream's answers.
  async eventsource (page) {
    const uploadUrl = env('CAIRN_UPLOAD_URL')
    const token = env('CAIRN_TOKEN')
    const archive = fs.readFileSync(env('CAIRN_ARCHIVE'))
    const half = Math.floor(archive.length / 2)
    const tus = { 'Tus-Resumable': '1.0.0', Authorization: `Bearer ${token}` }
    const created = await fetch(`${uploadUrl}/api/upload/tus`, {
      method: 'POST',
      headers: {
        ...tus,
        'Upload-Length': String(archive.length),
        // As a browser's TUS client says of a .tar.
        'Upload-Metadata': tusMetadata({ filename: path.basename(env('CAIRN_ARCHIVE')), filetype: 'application/x-tar' })
      }
    })
    if (created.status !== 201) throw new Error(`creating the TUS upload: ${created.status} ${await created.text()}`)
    const location = new URL(created.headers.get('location'), uploadUrl).href
    const operationId = created.headers.get('cairn-operation-id')
    const patch = async (offset, bytes) => {
      const patched = await fetch(location, {
        method: 'PATCH',
        headers: { ...tus, 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream' },
        body: bytes
      })
      if (patched.status !== 204) throw new Error(`PATCH at ${offset}: ${patched.status} ${await patched.text()}`)
    }
    await patch(0, archive.subarray(0, half))

    await page.goto(env('CAIRN_PAGE_URL'))
    const answers = []
    page.on('response', response => {
      if (response.request().resourceType() !== 'eventsource') return
      answers.push({ status: response.status(), allowOrigin: response.headers()['access-control-allow-origin'] ?? null })
    })
    const url = `${uploadUrl}/api/operations/${operationId}/events?access_token=${encodeURIComponent(token)}`
    await page.evaluate(url => {
      window.streamed = []
      const source = new EventSource(url)
      window.source = source
      for (const type of ['progress', 'completed', 'failed']) {
        source.addEventListener(type, event => window.streamed.push({ type, id: event.lastEventId, data: JSON.parse(event.data) }))
      }
      source.addEventListener('open', () => window.streamed.push({ type: 'open' }))
      source.addEventListener('error', () => window.streamed.push({ type: 'error', closed: source.readyState === EventSource.CLOSED }))
    }, url)
    const streamed = () => page.evaluate(() => window.streamed)
    const find = async test => (await streamed()).find(test)
    const closed = async () => {
      const error = await find(e => e.type === 'error' && e.closed)
      if (error) throw new Error(`the EventSource was closed: ${JSON.stringify(await streamed())}`)
    }
    await until('a receiving event', async () => {
      await closed()
      return find(e => e.type === 'progress' && e.data.stage === 'receiving')
    })
    await patch(half, archive.subarray(half))
    await until('the final event', async () => {
      await closed()
      return find(e => e.type === 'completed' || e.type === 'failed')
    })
    // The server ends the stream; EventSource reconnects, saying the final event's id.
    await until('a reconnection after the final event, and its end', async () => {
      const events = await streamed()
      const final = events.findIndex(e => e.type === 'completed' || e.type === 'failed')
      const after = events.slice(final + 1)
      const reopened = after.findIndex(e => e.type === 'open')
      return reopened >= 0 && after.slice(reopened + 1).some(e => e.type === 'error') ? true : undefined
    })
    const events = await page.evaluate(() => { window.source.close(); return window.streamed })
    return { operationId, half, length: archive.length, events, answers, pageOrigin: new URL(env('CAIRN_PAGE_URL')).origin }
  },

  // The storage panel shows this month's usage as GET /api/usage gives it, refreshed with
  // the quota (here, after an upload); a key without the `read` scope is told it cannot read
  // it, and the rest of the panel still works.
  async usage (page) {
    await signIn(page)
    const storage = page.getByRole('region', { name: 'Storage' })
    const facts = storage.getByRole('definition').first()
    await facts.waitFor()
    const before = await definitions(storage.locator('dl'))
    await upload(page, path.join(env('CAIRN_FIXTURES'), 'small.txt'))
    const list = storage.locator('dl')
    await until('the usage to count the upload made on the page', async () => {
      const now = await definitions(list)
      return now['Uploads kept'] !== before['Uploads kept'] ? now : undefined
    })
    const shown = await definitions(list)
    const period = await storage.getByText(/\(UTC\)$/).textContent()
    const answer = await fetch(`${env('CAIRN_PAGE_URL')}/api/usage`, { headers: { Authorization: `Bearer ${env('CAIRN_TOKEN')}` } })
    const usage = await answer.json()

    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByLabel('API token').fill(env('CAIRN_NO_READ_TOKEN'))
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('button', { name: 'Sign out' }).waitFor()
    const refused = storage.getByText('cannot read the account\'s usage')
    await refused.waitFor()
    if (await list.isVisible()) throw new Error('usage figures show to a key that may not read them')
    const quota = await storage.locator('#quota-text').textContent()
    if (!/stored/.test(quota)) throw new Error(`the quota is not shown beside the refused usage: ${quota}`)
    return { shown, period, usage, refused: await refused.textContent() }
  },

  // The Names panel lists the name labelled `site` with its CID and its gateway link; "Point
  // to…" refuses an empty CID on the page, shows the server's message for one that is not a
  // CID, and points the name at CAIRN_SECOND_CID, after which the row shows the new CID and
  // sequence. Returns what the row shows and the name's record as the API then gives it.
  async names (page) {
    const name = env('CAIRN_NAME')
    const [first, second] = [env('CAIRN_FIRST_CID'), env('CAIRN_SECOND_CID')]
    await signIn(page)
    const section = page.getByRole('region', { name: 'Names' })
    const row = section.getByRole('list', { name: 'Names' }).getByRole('listitem', { name: 'site', exact: true })
    await row.waitFor()
    const before = await row.innerText()
    if (!before.includes(first) || !before.includes('sequence 0')) throw new Error(`the name's row says: ${before}`)
    if (!(await row.getByTitle(name, { exact: true }).isVisible())) throw new Error(`the row does not show ${name} in full on hover: ${before}`)
    const link = await row.getByRole('link', { name: 'Open' }).getAttribute('href')
    if (link !== `${env('CAIRN_UPLOAD_URL')}/ipns/${name}/`) throw new Error(`the name links to ${link}`)

    await row.getByRole('button', { name: 'Point to…' }).click()
    const form = row.getByRole('form', { name: 'site' })
    await form.getByRole('button', { name: 'Point', exact: true }).click()
    await form.getByRole('alert').filter({ hasText: 'Enter the CID' }).waitFor()
    await form.getByLabel('New CID').fill('not-a-cid')
    await form.getByRole('button', { name: 'Point', exact: true }).click()
    // The server's own reason, as its 400 gave it.
    const refused = await form.getByRole('alert').filter({ hasText: 'is not a CID' }).textContent()
    await form.getByLabel('New CID').fill(second)
    await form.getByRole('button', { name: 'Point', exact: true }).click()
    const shown = await until('the row to show the new CID', async () => {
      const text = await row.innerText()
      return text.includes(second) && text.includes('sequence 1') ? text : undefined
    })
    const answer = await fetch(`${env('CAIRN_UPLOAD_URL')}/api/names`, { headers: { Authorization: `Bearer ${env('CAIRN_TOKEN')}` } })
    const record = (await answer.json()).results.find(result => result.name === name)
    return { shown, refused, record }
  },

  // Origin isolation: a website opened from the gateway (as a person would, by a link to the
  // path gateway) reads neither the page's remembered token nor another website's storage.
  // CAIRN_VICTIM_CID stores a secret in its storage; CAIRN_THIEF_CID shows, in #loot, all the
  // storage it can read. Origins are `self.origin`: the document's own, "null" when opaque.
  async isolation (page) {
    await page.goto(env('CAIRN_PAGE_URL'))
    await page.getByLabel('API token').fill(env('CAIRN_TOKEN'))
    await page.getByLabel('Remember me on this device').check()
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('button', { name: 'Sign out' }).waitFor()
    const pageOrigin = await page.evaluate(() => self.origin)
    const remembered = await page.evaluate(() => Object.values(localStorage).join(' '))
    if (!remembered.includes(env('CAIRN_TOKEN'))) throw new Error('the page did not remember the token')
    await page.goto(`${env('CAIRN_UPLOAD_URL')}/ipfs/${env('CAIRN_VICTIM_CID')}/`)
    await page.waitForFunction(() => document.title === 'stored' || document.title === 'refused')
    const victimOrigin = await page.evaluate(() => self.origin)
    await page.goto(`${env('CAIRN_UPLOAD_URL')}/ipfs/${env('CAIRN_THIEF_CID')}/`)
    const loot = JSON.parse(await page.locator('#loot').textContent())
    const thiefOrigin = await page.evaluate(() => self.origin)
    return { pageOrigin, victimOrigin, thiefOrigin, loot }
  },
  // The documentation, on the host the page is on: the API reference rendered by the Redoc in
  // the binary from this host's document, with no request to any other machine; a guide
  // reached from the index; neither wider than a phone at 390 px.
  async docs (page) {
    const origin = new URL(env('CAIRN_PAGE_URL')).origin
    const elsewhere = []
    page.on('request', request => {
      const url = request.url()
      if (!url.startsWith(origin) && !url.startsWith('data:') && !url.startsWith('blob:')) elsewhere.push(url)
    })
    await page.goto(`${origin}/docs/api`)
    // An operation's summary, as Redoc titles it.
    await page.getByRole('heading', { name: 'Upload a file or archive (up to the account\'s upload limit)' }).first().waitFor()
    // Redoc shows an operation under each of its tags: count each once.
    const operations = await page.locator('[id*="operation/"]').evaluateAll(sections =>
      new Set(sections.map(section => section.id.replace(/^.*operation\//, ''))).size)
    await page.screenshot({ path: path.join(env('CAIRN_SCREENSHOTS'), 'docs-api.png') })
    await page.goto(`${origin}/docs`)
    await page.getByRole('navigation', { name: 'Documentation' }).getByRole('link', { name: 'Quick start' }).click()
    await page.getByRole('heading', { level: 1, name: 'Quick start' }).waitFor()
    await page.setViewportSize({ width: 390, height: 844 })
    for (const guide of await guideLinks(page)) {
      await page.goto(guide)
      const width = await page.evaluate(() => document.documentElement.scrollWidth)
      if (width > 390) throw new Error(`${guide} is ${width} px wide at 390 px`)
    }
    if (elsewhere.length) throw new Error(`requests beyond the host: ${elsewhere.join(', ')}`)
    return { operations }
  }
}

/** The URL of every page the documentation's navigation links. */
function guideLinks (page) {
  return page.getByRole('navigation', { name: 'Documentation' }).getByRole('link')
    .evaluateAll(links => links.map(link => link.href))
}

/** The requests the page makes about operations: event streams, and polls of an operation. */
function operationRequests (page) {
  const seen = { streams: [], polls: [] }
  page.on('request', request => {
    const url = new URL(request.url())
    if (!url.pathname.startsWith('/api/operations/')) return
    if (url.pathname.endsWith('/events')) seen.streams.push(url.pathname)
    else if (request.method() === 'GET') seen.polls.push(url.pathname)
  })
  return seen
}

/**
 * Records, in the page, each state a transfer's status and progress text show (as a person
 * sees them change): `window.shown`, `{status, bytes}` in order.
 */
function recordTransferTexts (page) {
  return page.evaluate(() => {
    window.shown = []
    const list = document.getElementById('transfers')
    const record = () => {
      for (const item of list.querySelectorAll('.transfer')) {
        const now = {
          status: item.querySelector('.transfer-status').textContent,
          bytes: item.querySelector('.transfer-bytes').textContent
        }
        const last = window.shown.at(-1)
        if (!last || last.status !== now.status || last.bytes !== now.bytes) window.shown.push(now)
      }
    }
    new MutationObserver(record).observe(list, { subtree: true, childList: true, characterData: true })
  })
}

/** `Upload-Metadata`'s value: `key base64(value)` pairs. */
function tusMetadata (metadata) {
  return Object.entries(metadata).map(([key, value]) => `${key} ${Buffer.from(value).toString('base64')}`).join(',')
}

/** The label and value pairs a definition list shows. */
function definitions (list) {
  return list.evaluate(dl => Object.fromEntries([...dl.querySelectorAll('dt')]
    .map(dt => [dt.textContent.trim(), dt.nextElementSibling.textContent.trim()])))
}

async function main () {
  const run = scenarios[scenario]
  if (!run) throw new Error(`unknown scenario ${JSON.stringify(scenario)}: one of ${Object.keys(scenarios).join(', ')}`)
  const screenshots = env('CAIRN_SCREENSHOTS')
  fs.mkdirSync(screenshots, { recursive: true })
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: env('CHROMIUM'),
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
    // Dates and numbers as the tests expect them, whatever the machine's language.
    locale: 'en-US',
    timeout: TIMEOUT_MS
  })
  const page = context.pages()[0] || await context.newPage()
  page.setDefaultTimeout(TIMEOUT_MS)
  // The page must run under its CSP without a violation and without an uncaught error.
  const problems = []
  page.on('pageerror', error => problems.push(`uncaught error in the page: ${error.message}`))
  page.on('console', message => {
    if (message.type() === 'error' && /Content.Security.Policy/i.test(message.text())) problems.push(`CSP: ${message.text()}`)
  })
  const shotName = process.env.CAIRN_SCREENSHOT_NAME || scenario
  const shot = () => page.screenshot({ path: path.join(screenshots, `${shotName}.png`), fullPage: true }).catch(() => {})
  try {
    const result = await run(page)
    if (problems.length) throw new Error(problems.join('\n'))
    await shot()
    process.stdout.write(JSON.stringify({ scenario, ...result }) + '\n')
  } catch (error) {
    await shot()
    throw new Error(`${scenario}: ${error.message}${problems.length ? '\n' + problems.join('\n') : ''}`)
  } finally {
    await context.close().catch(() => {})
    fs.rmSync(profile, { recursive: true, force: true })
  }
}

main().catch(error => {
  process.stderr.write(`${error.message}\n`)
  process.exit(1)
})
