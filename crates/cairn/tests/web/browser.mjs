// The web page's browser tests: drives the machine's Chromium with playwright-core through one
// scenario against a running `cairn serve`, the way a person would, finding everything by its
// accessible role and label (so the page's labelling is tested too). Run by
// crates/cairn/tests/web_page.rs.
//
// Usage: node browser.mjs SCENARIO
//   SCENARIO: wrong-token | small | big | folder | drop | archive | resume | delete | pin |
//   keys | keys-forbidden | isolation | stream | stream-cut | eventsource | usage | names | docs |
//   links | webhooks | live-events | keyvalues | names-key | layout
// Environment: CAIRN_PAGE_URL (the account host), CAIRN_TOKEN, CAIRN_FIXTURES (small.txt,
// big.bin, folder/, site.tar.gz), CAIRN_SCREENSHOTS (where <scenario>.png goes, or
// <CAIRN_SCREENSHOT_NAME>.png; `keys` adds keys-secret-shown.png), CHROMIUM (the browser),
// CAIRN_PIN_CID (for `pin`), CAIRN_DROP_DIR (for `drop`: the folder to drop, by default
// CAIRN_FIXTURES/folder; give one with empty folders, which only a drop keeps),
// CAIRN_UPLOAD_URL (the upload host), CAIRN_VICTIM_CID and CAIRN_THIEF_CID (for `isolation`),
// CAIRN_ARCHIVE (for `stream`, `stream-cut` and `eventsource`: a tar that takes the server a
// few seconds to extract), CAIRN_NO_READ_TOKEN (for `usage`: a key without the `read` scope),
// CAIRN_NAME, CAIRN_FIRST_CID and CAIRN_SECOND_CID (for `names`: a name labelled `site`,
// pointing at the first, to be pointed at the second). `webhooks` and `layout` run a webhook
// receiver on loopback: their server must run with `--webhook-allow-private true`.
// The sections below the upload controls are closed at first: scenarios open the ones they
// use (`openSection`). `links`, `webhooks`, `live-events` and `keyvalues` add screenshots of
// their section at 1280 and 390 px (`<view>-1280.png`, `<view>-390.png`); `layout` saves the
// whole page closed and open at both widths (`layout-closed-1280.png`, `layout-open-390.png`,
// ...) and each section at both (`section-<name>-<width>.png`), and runs axe-core in the page.
// On success prints one JSON line, {"scenario": ..., "cid": ...}; on failure a message on
// stderr and a non-zero exit. Either way a full-page screenshot is saved.

import { chromium } from 'playwright-core'
import crypto from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import { createRequire } from 'node:module'
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

/**
 * Opens the page's section titled `name` (each is closed at first: its heading holds the
 * button that opens it), and answers the section (a region named by its heading).
 */
async function openSection (page, name) {
  const button = page.getByRole('heading', { level: 2, name, exact: true }).getByRole('button', { name, exact: true })
  if (await button.getAttribute('aria-expanded') !== 'true') await button.click()
  if (await button.getAttribute('aria-expanded') !== 'true') throw new Error(`the section ${name} did not open`)
  return page.getByRole('region', { name, exact: true })
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
    await openSection(page, 'Your uploads and pins')
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
    await openSection(page, 'Your uploads and pins')
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
    const section = await openSection(page, 'API keys')
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
    await page.getByRole('button', { name: 'Sign out' }).waitFor()
    await openSection(page, 'API keys')
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
    const section = await openSection(page, 'API keys')
    const notice = section.getByText('cannot manage keys')
    await notice.waitFor()
    if (await section.getByRole('form', { name: 'Create a key' }).isVisible()) throw new Error('the form to make a key shows to a key that may not')
    if (await section.getByRole('list', { name: 'Your keys' }).isVisible()) throw new Error('the list of keys shows to a key that may not read it')
    await openSection(page, 'Your uploads and pins')
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
  // the end. It is left open after the final event to reconnect once (with Last-Event-ID),
  // which the server answers 204: nothing is sent twice, and the EventSource closes for good
  // instead of reconnecting every few seconds. Returns every event and the stream's answers.
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
    // The server ends the stream; EventSource reconnects, saying the final event's id, is
    // answered 204 and closes.
    await until('a reconnection after the final event, refused for good', async () => {
      const events = await streamed()
      const final = events.findIndex(e => e.type === 'completed' || e.type === 'failed')
      return events.slice(final + 1).some(e => e.type === 'error' && e.closed) ? true : undefined
    })
    // Longer than EventSource's wait before reconnecting (3 s): it does not try again.
    await sleep(4000)
    const events = await page.evaluate(() => { window.source.close(); return window.streamed })
    return { operationId, half, length: archive.length, events, answers, pageOrigin: new URL(env('CAIRN_PAGE_URL')).origin }
  },

  // The storage panel shows this month's usage as GET /api/usage gives it, refreshed with
  // the quota (here, after an upload); a key without the `read` scope is told it cannot read
  // it, and the rest of the panel still works.
  async usage (page) {
    await signIn(page)
    const storage = await openSection(page, 'Storage')
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
    await openSection(page, 'Storage')
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
    const section = await openSection(page, 'Names')
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

  // An upload link made on the page (a name for its uploads, a day, two uploads of at most
  // 1 MiB, a key-value): its URL and TUS endpoint are shown once and copied with the button;
  // a plain fetch with no credential uploads through the URL; the list then shows the link
  // used once of twice; revoked on the page, the link refuses the next upload. Returns the
  // URLs, the upload's answer, the link as the API listed it and the refusal.
  async links (page) {
    const pageUrl = env('CAIRN_PAGE_URL')
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(pageUrl).origin })
    await signIn(page)
    const section = await openSection(page, 'Upload links')
    const form = section.getByRole('form', { name: 'Make a link' })
    const name = `through a link ${Date.now()}`
    await form.getByLabel('Name of its uploads (optional)').fill(name)
    await form.getByLabel('Expires').selectOption({ label: 'In 1 day' })
    await form.getByLabel('Number of uploads').fill('2')
    await form.getByLabel('Largest upload', { exact: true }).fill('1')
    await form.getByLabel('Unit of the largest upload through the link').selectOption({ label: 'MiB' })
    await form.getByText('Types, archives and key-values (optional)').click()
    await form.getByRole('button', { name: 'Add a key-value' }).click()
    // The new row's key has focus, as a keyboard user would go on from there.
    if (!await form.getByLabel('Key 1', { exact: true }).evaluate(input => input === document.activeElement)) throw new Error('the new key-value row did not take focus')
    await form.getByLabel('Key 1', { exact: true }).fill('source')
    await form.getByLabel('Value 1', { exact: true }).fill('link')
    await form.getByRole('button', { name: 'Make link' }).click()

    const shown = section.getByRole('region', { name: `Your new link “${name}”` })
    await shown.waitFor()
    const url = await shown.getByLabel('Link URL').inputValue()
    const tus = await shown.getByLabel('TUS endpoint').inputValue()
    if (!/\/api\/upload\/link\/cairnlink_\w+$/.test(url) || tus !== `${url}/tus`) throw new Error(`the page shows the link ${url} and ${tus}`)
    await shown.getByRole('button', { name: 'Copy link' }).click()
    const copied = await until('the clipboard to hold the link', async () => {
      const text = await page.evaluate(() => navigator.clipboard.readText())
      return text === url ? text : undefined
    })
    await screenshotBoth(page, 'links-new-link', section)

    // Through the copied link, with no key.
    const through = async () => {
      const body = new FormData()
      body.append('file', new Blob([fs.readFileSync(path.join(env('CAIRN_FIXTURES'), 'small.txt'))]), 'small.txt')
      const answer = await fetch(copied, { method: 'POST', body })
      return { status: answer.status, body: await answer.json() }
    }
    const uploaded = await through()
    if (uploaded.status !== 200) throw new Error(`uploading through the link: ${uploaded.status} ${JSON.stringify(uploaded.body)}`)

    const list = section.getByRole('list', { name: 'Your links' })
    const row = list.getByRole('listitem', { name, exact: true })
    await section.getByRole('button', { name: 'Refresh' }).click()
    const rowText = await until('the link to show its upload', async () => {
      const text = await row.innerText()
      return text.includes('1 of 2 used') ? text : undefined
    })
    for (const expected of ['active', '1.0 MiB', 'source=link']) {
      if (!rowText.includes(expected)) throw new Error(`the link's row does not say ${JSON.stringify(expected)}: ${rowText}`)
    }
    const listed = await fetch(`${env('CAIRN_UPLOAD_URL')}/api/upload-links`, { headers: { Authorization: `Bearer ${env('CAIRN_TOKEN')}` } })
    const record = (await listed.json()).links.find(link => link.name === name)

    // Hidden, the URLs are nowhere in the page.
    await shown.getByRole('button', { name: /hide the link/ }).click()
    await shown.waitFor({ state: 'hidden' })
    if (await page.evaluate(url => document.documentElement.outerHTML.includes(url) ||
      [...document.querySelectorAll('input')].some(input => input.value.includes(url)), url)) throw new Error('the link is still in the page once hidden')

    await row.getByRole('button', { name: 'Revoke' }).click()
    const dialog = page.getByRole('dialog')
    await dialog.getByRole('button', { name: 'Revoke' }).click()
    await row.waitFor({ state: 'detached' })
    const refused = await through()
    const lifetimeSeconds = (Date.parse(record.expiresAt) - Date.parse(record.createdAt)) / 1000
    return { url, tus, uploaded: uploaded.body, record, lifetimeSeconds, refused }
  },

  // A webhook endpoint added on the page, pointing at a receiver in this script: its signing
  // secret is shown once and copied, and signs what the receiver gets; its deliveries are
  // listed; with the receiver failing, a delivery shows its failed attempt and Retry, which
  // sends it again: the page shows the attempt count grow. Then it is deleted.
  async webhooks (page) {
    const pageUrl = env('CAIRN_PAGE_URL')
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(pageUrl).origin })
    const hook = await receiver()
    try {
      await signIn(page)
      const section = await openSection(page, 'Webhooks')
      const form = section.getByRole('form', { name: 'Add an endpoint' })
      // Without a URL, the page asks for one rather than sending the request.
      await form.getByRole('button', { name: 'Add endpoint' }).click()
      await form.getByRole('alert').filter({ hasText: 'Enter the URL' }).waitFor()
      await form.getByLabel('URL', { exact: true }).fill(hook.url)
      await form.getByRole('checkbox', { name: 'upload.completed' }).check()
      await form.getByRole('checkbox', { name: 'upload.deleted' }).check()
      await form.getByLabel('Description (optional)').fill('the test receiver')
      await form.getByRole('button', { name: 'Add endpoint' }).click()
      const shown = section.getByRole('region', { name: 'The signing secret of the test receiver' })
      await shown.waitFor()
      const secret = await shown.getByLabel('Signing secret').inputValue()
      if (!secret.startsWith('whsec_')) throw new Error(`the page shows ${JSON.stringify(secret)} as the signing secret`)
      await shown.getByRole('button', { name: 'Copy secret' }).click()
      await until('the clipboard to hold the secret', async () =>
        (await page.evaluate(() => navigator.clipboard.readText())) === secret ? true : undefined)

      const first = await apiUpload('first.txt', 'delivered\n')
      const delivered = await until('the receiver to get the first event', async () =>
        hook.received.find(request => JSON.parse(request.body).data?.id === first.id))
      const signed = signatureValid(secret, delivered)

      const row = section.getByRole('list', { name: 'Your endpoints' }).getByRole('listitem', { name: 'the test receiver', exact: true })
      await row.getByRole('button', { name: 'Deliveries' }).click()
      const deliveries = row.getByRole('list', { name: 'Deliveries to the test receiver' })
      const firstRow = deliveries.getByRole('listitem').first()
      await until('the first delivery to be listed as delivered', async () => {
        const text = (await firstRow.count()) ? await firstRow.innerText() : ''
        if (text.includes('delivered')) return text
        await row.getByRole('button', { name: 'Refresh' }).click()
        await sleep(300)
        return undefined
      })

      // The receiver fails from now on: the next delivery's attempt shows it, with Retry.
      hook.fail()
      const second = await apiUpload('second.txt', 'failed\n')
      await until('the receiver to refuse the second event', async () =>
        hook.received.find(request => JSON.parse(request.body).data?.id === second.id))
      const failing = deliveries.getByRole('listitem').first()
      const before = await until('the failed attempt to be listed', async () => {
        await row.getByRole('button', { name: 'Refresh' }).click()
        await sleep(300)
        const text = await failing.innerText()
        return text.includes('HTTP 500') && (await failing.getByRole('button', { name: 'Retry' }).count()) ? attemptsIn(text) : undefined
      })
      await screenshotBoth(page, 'webhooks-deliveries', section)
      const retries = []
      page.on('response', response => { if (response.url().endsWith('/retry')) retries.push(response.status()) })
      await failing.getByRole('button', { name: 'Retry' }).click()
      await row.getByRole('status').filter({ hasText: /^Retried/ }).waitFor()
      const after = attemptsIn(await failing.innerText())
      const sent = hook.received.filter(request => JSON.parse(request.body).data?.id === second.id)
      const ids = new Set(sent.map(request => request.headers['webhook-id']))

      await row.getByRole('button', { name: 'Delete' }).click()
      await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click()
      await row.waitFor({ state: 'detached' })
      const listed = await fetch(`${pageUrl}/api/webhooks`, { headers: { Authorization: `Bearer ${env('CAIRN_TOKEN')}` } })
      return { secret, signed, before, after, retries, sent: sent.length, webhookIds: ids.size, left: (await listed.json()).webhooks }
    } finally {
      hook.close()
    }
  },

  // The Live events section follows the account's stream: an upload made on the page shows
  // as upload.completed with its name and CID, newest first; paused, an event made meanwhile
  // waits (the section says so) and shows on Resume.
  async 'live-events' (page) {
    await signIn(page)
    const section = await openSection(page, 'Live events')
    await section.getByRole('status').filter({ hasText: 'Following your account live' }).waitFor()
    const cid = await upload(page, path.join(env('CAIRN_FIXTURES'), 'small.txt'))
    const log = section.getByRole('log')
    const latest = log.getByRole('listitem').first()
    const shown = await until('the upload to show in the live events', async () => {
      const text = (await latest.count()) ? await latest.innerText() : ''
      return text.includes('upload.completed') && text.includes(cid) ? text : undefined
    })
    await section.getByRole('button', { name: 'Pause' }).click()
    await apiUpload('while-paused.txt', 'made while paused\n')
    await section.getByRole('status').filter({ hasText: 'Paused: 1 new event is waiting' }).waitFor()
    if ((await log.innerText()).includes('while-paused.txt')) throw new Error('an event showed while paused')
    await section.getByRole('button', { name: 'Resume' }).click()
    const resumed = await until('the held event to show on resume', async () => {
      const text = await latest.innerText()
      return text.includes('while-paused.txt') ? text : undefined
    })
    await screenshotBoth(page, 'live-events', section)
    return { cid, shown, resumed, rows: await log.getByRole('listitem').count() }
  },

  // Key-values on the page: each upload shows its own; the lists filter by key=value (only
  // the upload tagged with it, and its pin); an upload is renamed and its key-values changed
  // (one changed, one added), then one removed, each saved with PATCH. Returns the uploads'
  // ids and what the page showed.
  async keyvalues (page) {
    const tagged = await apiUpload('tagged.txt', 'tagged\n', { user: '42', kind: 'avatar' })
    const other = await apiUpload('other.txt', 'other\n', { user: '7' })
    await signIn(page)
    const section = await openSection(page, 'Your uploads and pins')
    const uploads = section.getByRole('list', { name: 'Uploads', exact: true })
    const pins = section.getByRole('list', { name: 'Pins', exact: true })
    await uploads.getByRole('listitem', { name: 'other.txt', exact: true }).waitFor()
    const search = section.getByRole('search', { name: 'Uploads and pins' })
    await search.getByLabel('Key-value').fill('user')
    await search.getByRole('button', { name: 'Search' }).click()
    await search.getByRole('alert').filter({ hasText: 'key=value' }).waitFor()
    await search.getByLabel('Key-value').fill('user=42')
    await search.getByRole('button', { name: 'Search' }).click()
    await uploads.getByRole('listitem', { name: 'other.txt' }).waitFor({ state: 'detached' })
    const row = uploads.getByRole('listitem', { name: 'tagged.txt', exact: true })
    const filtered = {
      uploads: await rowNames(uploads),
      pins: await rowNames(pins),
      keyvalues: await row.getByRole('list', { name: 'Key-values' }).getByRole('listitem').allInnerTexts()
    }

    await row.getByRole('button', { name: 'Edit' }).click()
    const edit = row.getByRole('form', { name: 'Edit tagged.txt' })
    await edit.getByLabel('Name', { exact: true }).fill('renamed.txt')
    const kinds = edit.getByLabel(/^Value \d+$/)
    const keys = await edit.getByLabel(/^Key \d+$/).evaluateAll(inputs => inputs.map(input => input.value))
    await kinds.nth(keys.indexOf('kind')).fill('photo')
    await edit.getByRole('button', { name: 'Add a key-value' }).click()
    await edit.getByLabel(`Key ${keys.length + 1}`, { exact: true }).fill('album')
    await edit.getByLabel(`Value ${keys.length + 1}`, { exact: true }).fill('summer')
    await edit.getByRole('button', { name: 'Save' }).click()
    const renamed = uploads.getByRole('listitem', { name: 'renamed.txt', exact: true })
    await renamed.getByRole('status').filter({ hasText: 'Saved renamed.txt.' }).waitFor()
    // Focus is back on the row's Edit button.
    if (!await renamed.getByRole('button', { name: 'Edit' }).evaluate(button => button === document.activeElement)) throw new Error('focus did not go back to Edit')
    const changed = await renamed.getByRole('list', { name: 'Key-values' }).getByRole('listitem').allInnerTexts()
    await screenshotBoth(page, 'keyvalues-edited', section)

    // The new key-value finds it.
    await search.getByLabel('Key-value').fill('album=summer')
    await search.getByRole('button', { name: 'Search' }).click()
    await until('the filter by album=summer', async () => {
      const names = await rowNames(uploads)
      return names.length === 1 && names[0] === 'renamed.txt' ? names : undefined
    })

    // Removing a key-value sends it as null.
    await renamed.getByRole('button', { name: 'Edit' }).click()
    const again = renamed.getByRole('form', { name: 'Edit renamed.txt' })
    const now = await again.getByLabel(/^Key \d+$/).evaluateAll(inputs => inputs.map(input => input.value))
    await again.getByRole('button', { name: `Remove key-value ${now.indexOf('user') + 1}` }).click()
    await again.getByRole('button', { name: 'Save' }).click()
    await uploads.getByRole('listitem', { name: 'renamed.txt', exact: true }).getByRole('status').filter({ hasText: 'Saved' }).waitFor()
    const removed = await uploads.getByRole('listitem', { name: 'renamed.txt', exact: true })
      .getByRole('list', { name: 'Key-values' }).getByRole('listitem').allInnerTexts()
    return { tagged: tagged.id, other: other.id, filtered, changed, removed }
  },

  // A key made on the page with the `names` scope alone: returns its secret, for the test to
  // use it.
  async 'names-key' (page) {
    await signIn(page)
    const section = await openSection(page, 'API keys')
    const form = section.getByRole('form', { name: 'Create a key' })
    await form.getByLabel('Name', { exact: true }).fill('names only')
    await form.getByRole('checkbox', { name: 'names', exact: true }).check()
    await form.getByRole('button', { name: 'Create key' }).click()
    const shown = section.getByRole('region', { name: 'Your new key “names only”' })
    const secret = await shown.getByLabel('Secret key').inputValue()
    const row = section.getByRole('list', { name: 'Your keys' }).getByRole('listitem', { name: 'names only', exact: true })
    return { secret, row: await row.innerText() }
  },

  // The whole page with something in every section: its height at 1280 and 390 px with the
  // sections closed (as it opens), then every section opened (with its forms, a new secret,
  // an edit form and a deliveries list showing): none wider than 390 px, axe-core finding
  // nothing in either colour scheme, and screenshots of each at both widths.
  async layout (page) {
    const hook = await receiver()
    try {
      await fillAccount(hook.url)
      await signIn(page)
      await page.getByText(/stored\. Storage is|used \(/).waitFor()
      const heights = {}
      for (const width of [1280, 390]) {
        await page.setViewportSize({ width, height: 900 })
        heights[`closed${width}`] = await page.evaluate(() => document.documentElement.scrollHeight)
        await shot(page, `layout-closed-${width}`)
      }
      await page.setViewportSize({ width: 1280, height: 900 })
      const sections = await page.getByRole('heading', { level: 2 }).getByRole('button').allInnerTexts()
      for (const name of sections) await openSection(page, name)
      // A transfer with its CID box, at the top; the live events show it.
      await page.getByRole('region', { name: 'Live events' }).getByText('Following your account live').waitFor()
      await upload(page, path.join(env('CAIRN_FIXTURES'), 'small.txt'))
      // What opens inside them: an upload's edit form, the forms' optional parts, a new key,
      // link and signing secret, an endpoint's deliveries.
      const library = page.getByRole('region', { name: 'Your uploads and pins' })
      await library.getByRole('list', { name: 'Uploads', exact: true }).getByRole('button', { name: 'Edit' }).first().click()
      for (const summary of await page.locator('details summary').all()) await summary.click()
      const keys = page.getByRole('region', { name: 'API keys' })
      await keys.getByLabel('Name', { exact: true }).fill('a key for the layout')
      await keys.getByRole('checkbox', { name: 'read', exact: true }).check()
      await keys.getByRole('button', { name: 'Create key' }).click()
      await keys.getByRole('region', { name: /^Your new key/ }).waitFor()
      const links = page.getByRole('region', { name: 'Upload links' })
      await links.getByRole('button', { name: 'Make link' }).click()
      await links.getByRole('region', { name: /^Your new link/ }).waitFor()
      const webhooks = page.getByRole('region', { name: 'Webhooks' })
      await webhooks.getByLabel('URL', { exact: true }).fill(hook.url)
      await webhooks.getByRole('button', { name: 'Add endpoint' }).click()
      await webhooks.getByRole('region', { name: /^The signing secret/ }).waitFor()
      await webhooks.getByRole('listitem', { name: 'receiver', exact: true }).getByRole('button', { name: 'Deliveries' }).click()
      await webhooks.getByRole('list', { name: 'Deliveries to receiver' }).getByRole('listitem').first().waitFor()
      await page.getByRole('region', { name: 'Live events' }).getByRole('log').getByRole('listitem').first().waitFor()

      const overflow = {}
      for (const width of [390, 1280]) {
        await page.setViewportSize({ width, height: 900 })
        heights[`open${width}`] = await page.evaluate(() => document.documentElement.scrollHeight)
        await shot(page, `layout-open-${width}`)
        for (const name of ['Upload', ...sections]) {
          const section = page.getByRole('region', { name, exact: true })
          await section.screenshot({ path: path.join(env('CAIRN_SCREENSHOTS'), `section-${slug(name)}-${width}.png`) })
        }
        const wide = await page.evaluate(() => {
          const width = document.documentElement.clientWidth
          return [...document.querySelectorAll('main *')]
            .filter(el => { const box = el.getBoundingClientRect(); return box.width > 0 && box.right > width + 0.5 })
            .map(el => `${el.closest('section')?.id}: <${el.tagName.toLowerCase()} id="${el.id}" class="${el.className}"> to ${Math.round(el.getBoundingClientRect().right)} px`)
        })
        const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth)
        overflow[width] = { scrollWidth, wide }
        if (scrollWidth > width || wide.length) throw new Error(`at ${width} px the page is ${scrollWidth} px wide: ${wide.join('; ')}`)
      }
      await page.setViewportSize({ width: 1280, height: 900 })
      const violations = {}
      for (const colorScheme of ['light', 'dark']) {
        await page.emulateMedia({ colorScheme })
        violations[colorScheme] = await axe(page)
      }
      await page.emulateMedia({ colorScheme: 'light' })
      const found = Object.values(violations).flat()
      if (found.length) throw new Error(`axe-core: ${JSON.stringify(violations, null, 1)}`)
      return { heights, sections, overflow, violations }
    } finally {
      hook.close()
    }
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

/** A full-page screenshot named `name`.png. */
function shot (page, name) {
  return page.screenshot({ path: path.join(env('CAIRN_SCREENSHOTS'), `${name}.png`), fullPage: true })
}

/** `section`'s screenshot at 1280 px and at 390 px wide: `name`-1280.png and `name`-390.png. */
async function screenshotBoth (page, name, section) {
  const size = page.viewportSize()
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 })
    await section.screenshot({ path: path.join(env('CAIRN_SCREENSHOTS'), `${name}-${width}.png`) })
  }
  await page.setViewportSize(size)
}

/** `API keys` → `api-keys`. */
function slug (name) {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')
}

/** A multipart upload with the page's token, from outside the page: the upload's answer. */
async function apiUpload (name, text, keyvalues = null) {
  const body = new FormData()
  // The key-values before the file, as the server reads the form in order.
  if (keyvalues) body.append('keyvalues', JSON.stringify(keyvalues))
  body.append('file', new Blob([text]), name)
  const answer = await fetch(`${env('CAIRN_UPLOAD_URL')}/api/upload`, {
    method: 'POST', headers: { Authorization: `Bearer ${env('CAIRN_TOKEN')}` }, body
  })
  if (answer.status !== 200) throw new Error(`uploading ${name}: ${answer.status} ${await answer.text()}`)
  return answer.json()
}

/** A JSON request with the page's token to `url`; fails unless it answers 2xx. */
async function apiCall (url, method, json) {
  const answer = await fetch(url, {
    method,
    headers: { Authorization: `Bearer ${env('CAIRN_TOKEN')}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(json)
  })
  if (!answer.ok) throw new Error(`${method} ${url}: ${answer.status} ${await answer.text()}`)
  return answer.json()
}

/** Something in every section: 12 uploads with key-values, a name, keys, links and a webhook to `hookUrl`. */
async function fillAccount (hookUrl) {
  const [account, uploadHost] = [env('CAIRN_PAGE_URL'), env('CAIRN_UPLOAD_URL')]
  await apiCall(`${account}/api/webhooks`, 'POST', { url: hookUrl, events: ['upload.completed'], description: 'receiver' })
  let last
  for (let i = 1; i <= 12; i++) last = await apiUpload(`file-${i}.txt`, `file ${i}\n`, { user: String(i % 3), batch: 'layout' })
  await apiCall(`${uploadHost}/api/names`, 'POST', { cid: last.cid, label: 'site' })
  for (const name of ['ci', 'backups', 'phone', 'laptop', 'app', 'old']) await apiCall(`${account}/api/keys`, 'POST', { name, scopes: ['read'] })
  for (const name of ['avatars', 'invoices']) {
    await apiCall(`${uploadHost}/api/upload-links`, 'POST', { name, uploads: 5, maxBytes: 1 << 20, mimeTypes: ['image/*'], keyvalues: { from: name } })
  }
}

/**
 * A webhook receiver on loopback: records each request (headers, body, the status answered),
 * answering 200 until `fail()`, then 500.
 */
function receiver () {
  const received = []
  let status = 200
  const server = http.createServer((request, response) => {
    const chunks = []
    request.on('data', chunk => chunks.push(chunk))
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString(), status })
      response.writeHead(status, { 'Content-Type': 'text/plain' }).end(status === 200 ? 'ok' : 'failing on purpose')
    })
  })
  return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}/hook`,
    received,
    fail: () => { status = 500 },
    close: () => { server.closeAllConnections(); server.close() }
  })))
}

/** Whether a request carries a Standard Webhooks signature made with `secret` (`whsec_` + base64 key). */
function signatureValid (secret, { headers, body }) {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64')
  const signed = `${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`
  const expected = crypto.createHmac('sha256', key).update(signed).digest('base64')
  return (headers['webhook-signature'] || '').split(' ').includes(`v1,${expected}`)
}

/** The titles of a list's rows (not of the lists inside them). */
function rowNames (list) {
  return list.evaluate(ul => [...ul.children].map(row => row.querySelector('h4').textContent))
}

/** The number of attempts a delivery's row shows. */
function attemptsIn (text) {
  const attempts = Number(/Attempts\s+(\d+)/.exec(text)?.[1])
  if (!Number.isInteger(attempts)) throw new Error(`no attempt count in ${text}`)
  return attempts
}

/**
 * axe-core's WCAG 2.1 A and AA rules and its best practices, run in the page (injected by
 * evaluation, which the page's CSP does not govern): each violation's rule, impact and the
 * elements it found.
 */
async function axe (page) {
  const source = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
  await page.evaluate(source)
  return page.evaluate(async () => {
    const results = await window.axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }
    })
    return results.violations.map(violation => ({
      id: violation.id,
      impact: violation.impact,
      help: violation.help,
      nodes: violation.nodes.slice(0, 5).map(node => `${node.target.join(' ')}: ${node.failureSummary}`)
    }))
  })
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
