// Packs a folder into a POSIX tar (ustar headers, pax records where ustar falls short) as a
// Blob made of the 512-byte headers and the File objects themselves: the browser streams the
// files from disk when the Blob is sent, so nothing is read into memory here.
// Format: https://pubs.opengroup.org/onlinepubs/9699919799/utilities/pax.html

const BLOCK = 512
/** The largest size a ustar header holds: 11 octal digits. */
const USTAR_MAX_SIZE = 0o77777777777
const encoder = new TextEncoder()

/**
 * @typedef {{path: string, file: File} | {path: string, directory: true}} TarEntry
 * `path` is relative to the folder, `/`-separated, without a leading or trailing `/`.
 */

/**
 * A tar of `entries`, the folder itself as its root: a `./` entry first (as GNU tar and bsdtar
 * write it, and so the server recognises the format from the first header), then every entry
 * sorted by path so the same folder always gives the same bytes (a resumed upload depends on
 * it). Directory entries keep empty folders.
 * @param {TarEntry[]} entries
 * @returns {Blob}
 */
export function buildTar (entries) {
  const sorted = [...entries].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  // Directories get the newest file's time: any fixed value keeps the bytes the same.
  const newest = sorted.reduce((max, e) => (e.file ? Math.max(max, e.file.lastModified) : max), 0)
  const mtime = Math.floor(newest / 1000)
  const parts = [header({ name: './', type: '5', size: 0, mtime, mode: 0o755 })]
  for (const entry of sorted) {
    if (entry.file) {
      const size = entry.file.size
      parts.push(...withPax({ name: entry.path, type: '0', size, mtime: Math.floor(entry.file.lastModified / 1000), mode: 0o644 }))
      parts.push(entry.file)
      const padding = (BLOCK - (size % BLOCK)) % BLOCK
      if (padding) parts.push(new Uint8Array(padding))
    } else {
      parts.push(...withPax({ name: entry.path + '/', type: '5', size: 0, mtime, mode: 0o755 }))
    }
  }
  // The end of the archive: two zero blocks.
  parts.push(new Uint8Array(BLOCK * 2))
  return new Blob(parts, { type: 'application/x-tar' })
}

/**
 * The header of one entry, preceded by a pax extended header (`x`) when the name is longer
 * than ustar's 100-byte field or not plain ASCII, or the size is over ustar's 8 GiB.
 */
function withPax (fields) {
  const nameBytes = encoder.encode(fields.name)
  const records = []
  // eslint-disable-next-line no-control-regex
  if (nameBytes.length > 100 || /[^\x20-\x7e]/.test(fields.name)) records.push(paxRecord('path', fields.name))
  if (fields.size > USTAR_MAX_SIZE) records.push(paxRecord('size', String(fields.size)))
  if (records.length === 0) return [header(fields)]
  const body = concat(records)
  const padding = (BLOCK - (body.length % BLOCK)) % BLOCK
  return [
    header({ name: 'PaxHeaders/' + asciiTail(fields.name), type: 'x', size: body.length, mtime: fields.mtime, mode: 0o644 }),
    body,
    new Uint8Array(padding),
    header({ ...fields, name: asciiTail(fields.name), size: Math.min(fields.size, USTAR_MAX_SIZE) })
  ]
}

/** `"<length> <key>=<value>\n"`, where the length counts the whole record, itself included. */
function paxRecord (key, value) {
  const rest = encoder.encode(` ${key}=${value}\n`)
  let length = rest.length + 1
  while (String(length).length + rest.length !== length) length = String(length).length + rest.length
  return concat([encoder.encode(String(length)), rest])
}

/** A stand-in name for the ustar field when a pax `path` carries the real one. */
function asciiTail (name) {
  // eslint-disable-next-line no-control-regex
  const ascii = name.replace(/[^\x20-\x7e]/g, '_')
  return ascii.length > 99 ? ascii.slice(-99) : ascii
}

function header ({ name, type, size, mtime, mode }) {
  const block = new Uint8Array(BLOCK)
  writeText(block, 0, 100, name)
  writeOctal(block, 100, 8, mode)
  writeOctal(block, 108, 8, 0) // uid
  writeOctal(block, 116, 8, 0) // gid
  writeOctal(block, 124, 12, size)
  writeOctal(block, 136, 12, mtime)
  block.fill(0x20, 148, 156) // the checksum field counts as spaces while summing
  block[156] = type.charCodeAt(0)
  writeText(block, 257, 6, 'ustar') // magic "ustar\0"
  writeText(block, 263, 2, '00') // version
  let sum = 0
  for (const byte of block) sum += byte
  writeText(block, 148, 8, sum.toString(8).padStart(6, '0') + '\0 ')
  return block
}

function writeText (block, offset, length, text) {
  block.set(encoder.encode(text).subarray(0, length), offset)
}

/** An octal number, zero-padded, NUL-terminated, filling the field. */
function writeOctal (block, offset, length, value) {
  writeText(block, offset, length, value.toString(8).padStart(length - 1, '0') + '\0')
}

function concat (arrays) {
  const out = new Uint8Array(arrays.reduce((n, a) => n + a.length, 0))
  let at = 0
  for (const array of arrays) {
    out.set(array, at)
    at += array.length
  }
  return out
}

