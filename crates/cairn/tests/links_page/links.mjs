// The upload-link browser tests' driver (run by crates/cairn/tests/upload_links_browser.rs):
// bundles page.js with the upload clients (esbuild), serves it with page.html from a server of
// its own on 127.0.0.1 (so the page's origin is not Cairn's, and its uploads are cross-origin,
// preflights and all), opens it in the machine's Chromium with playwright-core, chooses the
// files in its `<input type=file>` and runs one scenario. The page gets the link's URLs only,
// never a key.
//
// Usage: node links.mjs SCENARIO FILE...
//   SCENARIO: loaded (the clients load; no upload) | tus (tus-js-client, 4 MiB chunks) |
//   uppy | form (multipart fetch) | tus-twice (tus-js-client twice through the same link)
// Environment: CHROMIUM (the browser), CAIRN_LINK_URL and CAIRN_LINK_TUS (the link's `url`
// and `tusEndpoint`).
// On success prints one JSON line, {"scenario", "pageOrigin", ...what the page answered}
// (see page.js); on failure a message on stderr and a non-zero exit.

import { chromium } from 'playwright-core'
import * as esbuild from 'esbuild'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'

const TIMEOUT_MS = 120_000
const here = path.dirname(new URL(import.meta.url).pathname)
const [scenario, ...files] = process.argv.slice(2)

function env (name) {
  const value = process.env[name]
  if (!value) throw new Error(`${name} is not set`)
  return value
}

// What each scenario asks of the page (`window.*` are page.js's functions).
const scenarios = {
  loaded: page => page.evaluate(() => ({ ok: window.clientsLoaded })),
  // Chunks smaller than the file, so the upload takes several PATCHes.
  tus: page => page.evaluate(tusEndpoint => window.tusUpload(tusEndpoint, { chunkSize: 4 << 20 }), env('CAIRN_LINK_TUS')),
  uppy: page => page.evaluate(tusEndpoint => window.uppyUpload(tusEndpoint), env('CAIRN_LINK_TUS')),
  form: page => page.evaluate(url => window.formUpload(url), env('CAIRN_LINK_URL')),
  'tus-twice': page => page.evaluate(async tusEndpoint => ({
    first: await window.tusUpload(tusEndpoint),
    second: await window.tusUpload(tusEndpoint)
  }), env('CAIRN_LINK_TUS'))
}

/** page.html and the bundle, on 127.0.0.1 at a port of its own; resolves with its origin. */
async function servePage () {
  const bundled = await esbuild.build({
    entryPoints: [path.join(here, 'page.js')],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    logLevel: 'silent'
  })
  const files = {
    '/': ['text/html', fs.readFileSync(path.join(here, 'page.html'))],
    '/bundle.js': ['text/javascript', bundled.outputFiles[0].contents]
  }
  const server = http.createServer((req, res) => {
    const file = files[req.url]
    if (!file) return res.writeHead(404).end()
    res.writeHead(200, { 'content-type': file[0] }).end(file[1])
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  return { server, origin: `http://127.0.0.1:${server.address().port}` }
}

async function main () {
  const run = scenarios[scenario]
  if (!run) throw new Error(`unknown scenario ${JSON.stringify(scenario)}: one of ${Object.keys(scenarios).join(', ')}`)
  const { server, origin } = await servePage()
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: env('CHROMIUM'),
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    timeout: TIMEOUT_MS
  })
  try {
    const page = context.pages()[0] || await context.newPage()
    page.setDefaultTimeout(TIMEOUT_MS)
    const problems = []
    page.on('pageerror', error => problems.push(`uncaught error in the page: ${error.message}`))
    await page.goto(origin)
    await page.waitForFunction(() => window.clientsLoaded !== undefined)
    if (files.length) await page.locator('#file').setInputFiles(files)
    const result = await run(page)
    if (problems.length) throw new Error(problems.join('\n'))
    process.stdout.write(JSON.stringify({ scenario, pageOrigin: origin, ...result }) + '\n')
  } finally {
    await context.close().catch(() => {})
    fs.rmSync(profile, { recursive: true, force: true })
    server.close()
  }
}

main().catch(error => {
  process.stderr.write(`${scenario}: ${error.message}\n`)
  process.exit(1)
})
