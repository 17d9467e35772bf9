// Uploads a file with the official tus-js-client, as a browser or Node app would.
// Usage: node tus_js.mjs ENDPOINT TOKEN FILE URL_STORAGE MODE   (MODE: single | parallel)
// Prints "url <upload url>", "resumed <url>", "progress <bytes>" and finally "done <url>".
import fs from 'node:fs'
import { Upload, FileUrlStorage } from 'tus-js-client'

const [endpoint, token, file, storage, mode] = process.argv.slice(2)
const data = fs.readFileSync(file)
const upload = new Upload(data, {
  endpoint,
  headers: { Authorization: `Bearer ${token}` },
  chunkSize: 256 * 1024,
  parallelUploads: mode === 'parallel' ? 3 : 1,
  metadata: { filename: 'interop.bin', filetype: 'application/octet-stream' },
  urlStorage: new FileUrlStorage(storage),
  retryDelays: [0, 200, 500],
  onUploadUrlAvailable () { console.log(`url ${upload.url}`) },
  onProgress (sent) { console.log(`progress ${sent}`) },
  onError (error) { console.log(`error ${error}`); process.exit(1) },
  onSuccess () { console.log(`done ${upload.url}`) }
})
const previous = await upload.findPreviousUploads()
if (previous.length > 0) {
  upload.resumeFromPreviousUpload(previous[0])
  console.log(`resumed ${previous[0].uploadUrl}`)
}
upload.start()
