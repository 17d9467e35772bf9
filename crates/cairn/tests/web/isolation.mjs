// Origin isolation in a real browser: content opened from the gateway cannot read the web
// page's stored token, nor the storage of other content. Run by crates/cairn/tests/web_page.rs.
//
// Usage: node isolation.mjs
// Environment: CAIRN_PAGE_URL (the account host), CAIRN_UPLOAD_URL (the upload host),
// CAIRN_TOKEN, CHROMIUM, CAIRN_SCREENSHOTS, CAIRN_VICTIM_CID (a page that stores a secret in
// its own storage), CAIRN_THIEF_CID (a page that shows all the storage it can read, in
// <pre id="loot">), CAIRN_SCREENSHOT_NAME.
// Prints one JSON line: the page's, the victim's and the thief's origins (`self.origin`: the
// document's own, "null" when opaque), and the loot.

import { chromium } from 'playwright-core'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const env = name => {
  const value = process.env[name]
  if (!value) throw new Error(`${name} is not set`)
  return value
}

async function main () {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: env('CHROMIUM'),
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    timeout: 60_000
  })
  const page = context.pages()[0] || await context.newPage()
  page.setDefaultTimeout(60_000)
  try {
    // Signed in and remembered: the token is in the page origin's localStorage.
    await page.goto(env('CAIRN_PAGE_URL'))
    await page.getByLabel('API token').fill(env('CAIRN_TOKEN'))
    await page.getByLabel('Remember me on this device').check()
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('button', { name: 'Sign out' }).waitFor()
    const pageOrigin = await page.evaluate(() => self.origin)
    const remembered = await page.evaluate(() => Object.values(localStorage).join(' '))
    if (!remembered.includes(env('CAIRN_TOKEN'))) throw new Error('the page did not remember the token')

    // Both are opened as a person would: a link to the path gateway.
    await page.goto(`${env('CAIRN_UPLOAD_URL')}/ipfs/${env('CAIRN_VICTIM_CID')}/`)
    await page.waitForFunction(() => document.title === 'stored' || document.title === 'refused')
    const victimOrigin = await page.evaluate(() => self.origin)
    await page.goto(`${env('CAIRN_UPLOAD_URL')}/ipfs/${env('CAIRN_THIEF_CID')}/`)
    const loot = JSON.parse(await page.locator('#loot').textContent())
    const thiefOrigin = await page.evaluate(() => self.origin)
    await page.screenshot({ path: path.join(env('CAIRN_SCREENSHOTS'), `${env('CAIRN_SCREENSHOT_NAME')}.png`) })
    process.stdout.write(JSON.stringify({ pageOrigin, victimOrigin, thiefOrigin, loot }) + '\n')
  } finally {
    await context.close().catch(() => {})
    fs.rmSync(profile, { recursive: true, force: true })
  }
}

main().catch(error => {
  process.stderr.write(`${error.stack || error.message}\n`)
  process.exit(1)
})
