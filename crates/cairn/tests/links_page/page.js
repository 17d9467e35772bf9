// What runs in the page (bundled with tus-js-client and Uppy by links.mjs): one function per
// client, each uploading the files of `#file` through an upload link with no Authorization
// header, as a third-party app would. Each resolves with what a user of that client can see:
// on success the upload's URL (or JSON answer) and the operation id, on failure the status and
// the JSON error body. None rejects, so the driving script reports either.

import * as tus from 'tus-js-client'
import Uppy from '@uppy/core'
import Tus from '@uppy/tus'

/** The nth file chosen in `#file`. */
function chosen (n = 0) {
  const file = document.getElementById('file').files[n]
  if (!file) throw new Error(`no file ${n} chosen`)
  return file
}

/** A refusal as the page sees it: the status and the body, parsed if it is JSON. */
function refusal (status, text, message) {
  let body = text
  try { body = JSON.parse(text) } catch {}
  return { ok: false, status, body, message }
}

/** The operation id of a TUS creation, from the header Cairn exposes to CORS. */
function operationIdFrom (res, seen) {
  const id = res.getHeader('cairn-operation-id')
  if (id) seen.operationId = id
}

// tus-js-client: `options` go to the client (such as `chunkSize`).
window.tusUpload = (endpoint, options = {}, n = 0) => new Promise(resolve => {
  const file = chosen(n)
  const seen = {}
  const upload = new tus.Upload(file, {
    endpoint,
    metadata: { filename: file.name, filetype: file.type },
    // Each call is a new upload: no resuming of an earlier one of the same file from storage.
    storeFingerprintForResuming: false,
    retryDelays: [],
    onAfterResponse: (req, res) => operationIdFrom(res, seen),
    onSuccess: () => resolve({ ok: true, uploadUrl: upload.url, operationId: seen.operationId }),
    onError: error => {
      const res = error.originalResponse
      resolve(res ? refusal(res.getStatus(), res.getBody(), error.message) : { ok: false, message: error.message })
    },
    ...options
  })
  upload.start()
})

// Uppy with its Tus plugin, as its documentation sets it up.
window.uppyUpload = async (endpoint, n = 0) => {
  const file = chosen(n)
  const seen = {}
  const uppy = new Uppy().use(Tus, {
    endpoint,
    retryDelays: [],
    onAfterResponse: (req, res) => operationIdFrom(res, seen)
  })
  uppy.addFile({ name: file.name, type: file.type, data: file, source: 'Local' })
  const result = await uppy.upload()
  const [done] = result.successful
  if (done) return { ok: true, uploadUrl: done.response.uploadURL, operationId: seen.operationId }
  const [failed] = result.failed
  const xhr = failed?.response?.body?.xhr
  return xhr ? refusal(xhr.status, xhr.responseText, String(failed.error)) : { ok: false, message: String(failed?.error) }
}

// A plain multipart POST to the link's URL.
window.formUpload = async (url, n = 0) => {
  const form = new FormData()
  form.append('file', chosen(n))
  const response = await fetch(url, { method: 'POST', body: form })
  const text = await response.text()
  if (!response.ok) return refusal(response.status, text)
  return { ok: true, status: response.status, body: JSON.parse(text) }
}

window.clientsLoaded = typeof tus.Upload === 'function' && tus.isSupported && typeof Uppy === 'function'
