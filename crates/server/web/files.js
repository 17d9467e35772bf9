// Turns what the user drops or picks into upload items: plain files stay files; a folder
// becomes one list of entries (files and directories, paths relative to the folder) for
// tar.js. Drops are walked with the File and Directory Entries API, which, unlike a folder
// picker, also sees empty folders.

/**
 * @typedef {{kind: 'file', file: File}} FileItem
 * @typedef {{kind: 'folder', name: string, entries: import('./tar.js').TarEntry[]}} FolderItem
 */

/**
 * The items of a drop. The entries must be taken from the DataTransfer before the drop
 * handler returns (the browser empties it afterwards), so call this synchronously from the
 * handler and await the result.
 * @param {DataTransfer} dataTransfer
 * @returns {Promise<Array<FileItem|FolderItem>>}
 */
export function itemsFromDrop (dataTransfer) {
  const entries = []
  const loose = []
  for (const item of dataTransfer.items || []) {
    if (item.kind !== 'file') continue
    const entry = item.webkitGetAsEntry?.()
    if (entry) {
      entries.push(entry)
    } else {
      const file = item.getAsFile()
      if (file) loose.push(file)
    }
  }
  // A browser without webkitGetAsEntry still gives the files.
  if (entries.length === 0 && loose.length === 0) loose.push(...(dataTransfer.files || []))
  return (async () => {
    const items = loose.map(file => ({ kind: 'file', file }))
    for (const entry of entries) {
      if (entry.isDirectory) {
        items.push({ kind: 'folder', name: entry.name, entries: await walk(entry, '') })
      } else {
        items.push({ kind: 'file', file: await fileOf(entry) })
      }
    }
    return items
  })()
}

/** Every entry under a dropped directory, hidden ones and empty directories included. */
async function walk (directory, prefix) {
  const found = []
  for (const entry of await readAll(directory)) {
    const path = prefix + entry.name
    if (entry.isDirectory) {
      found.push({ path, directory: true })
      found.push(...await walk(entry, path + '/'))
    } else if (entry.isFile) {
      found.push({ path, file: await fileOf(entry) })
    }
  }
  return found
}

/** readEntries gives a directory's entries in batches (100 in Chromium): read until empty. */
async function readAll (directory) {
  const reader = directory.createReader()
  const all = []
  for (;;) {
    const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject))
    if (batch.length === 0) return all
    all.push(...batch)
  }
}

function fileOf (entry) {
  return new Promise((resolve, reject) => entry.file(resolve, reject))
}

/**
 * The folders of an `<input webkitdirectory>` selection: each file's `webkitRelativePath`
 * starts with the picked folder's name. The picker hands over files only, so empty folders
 * are lost; the folders on the way to each file are added as entries.
 * @param {FileList|File[]} files
 * @returns {FolderItem[]}
 */
export function foldersFromPicker (files) {
  const folders = new Map()
  for (const file of files) {
    const parts = (file.webkitRelativePath || file.name).split('/')
    const root = parts.length > 1 ? parts.shift() : ''
    if (!folders.has(root)) folders.set(root, { kind: 'folder', name: root || 'folder', entries: [], directories: new Set() })
    const folder = folders.get(root)
    for (let depth = 1; depth < parts.length; depth++) {
      folder.directories.add(parts.slice(0, depth).join('/'))
    }
    folder.entries.push({ path: parts.join('/'), file })
  }
  return [...folders.values()].map(({ directories, ...folder }) => ({
    ...folder,
    entries: [...folder.entries, ...[...directories].map(path => ({ path, directory: true }))]
  }))
}

/** Total bytes of the files in a folder's entries. */
export function folderBytes (entries) {
  return entries.reduce((sum, entry) => sum + (entry.file ? entry.file.size : 0), 0)
}
