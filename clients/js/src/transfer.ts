/**
 * Sending a file: one multipart POST when it is within the upload limit, else TUS with
 * tus-js-client (the server refuses a larger POST; TUS sends it in chunks, each stored durably
 * before it is acknowledged, and resumes from the server's offset after a network failure).
 *
 * @module
 */

import { DetailedError, Upload } from "tus-js-client";

import { CairnError } from "./errors.js";
import type { ArchiveMode, CidProfile, KeyValues, UploadResult } from "./records.js";

/**
 * What a TUS upload's chunks hold. Each is read into memory and stored durably (fsynced) by the
 * server before it answers, so a chunk is a trade between memory, fsyncs and what a failure
 * sends again; 8 MiB also stays under the body limits of common proxies.
 */
const TUS_CHUNK_BYTES = 8 << 20;

/** The name a file with none is sent under. */
const UNNAMED = "upload";

/** How an upload is sent and tagged. */
export interface UploadOptions {
  /** The upload's name (default: the `File`'s name); its extension helps tell its media type. */
  name?: string;
  /** Tags to find the upload by (`uploads.list({ kv })`). */
  keyvalues?: KeyValues;
  /** The CID profile (default: the server's). */
  profile?: CidProfile;
  /** What to do with an archive (default `extract`, or what the upload link says). */
  archiveMode?: ArchiveMode;
  /**
   * Told the bytes sent so far and the file's size; never goes back, and ends at the size. A
   * POST reports its start and its end; TUS reports as its chunks go.
   */
  onProgress?: (bytesSent: number, bytesTotal: number) => void;
  /** Aborts the upload (a TUS upload is deleted from the server). */
  signal?: AbortSignal;
}

/** An upload sent by TUS: its CID comes once the server has processed it (`waitForCid`). */
export interface TusUpload {
  /** The upload's id. */
  id: string;
  /** The operation that processes it, when the server named it. */
  operationId: number | null;
  /** Always `null`: the server processes the bytes after the last chunk. */
  cid: null;
  /** The upload's URL: its `GET` tells its state, with no key for an upload made through a link. */
  tusUrl: string;
}

/** What an upload answered: the server's result for a POST, or a {@link TusUpload}. */
export type SentUpload = UploadResult | TusUpload;

/** Where a file goes, and with which headers. */
export interface Destination {
  /** Takes the multipart POST. */
  postUrl: string;
  /** Creates TUS uploads. */
  tusEndpoint: string;
  headers: Record<string, string>;
}

/** Send `file` to `to`: by POST when its size is at most `postLimit` bytes, else by TUS. */
export async function send(
  file: Blob | Uint8Array,
  to: Destination,
  postLimit: number,
  options: UploadOptions,
): Promise<SentUpload> {
  options.signal?.throwIfAborted();
  // A view of shared memory (which TypeScript's `Uint8Array` allows) is refused by `Blob` itself.
  const blob = file instanceof Blob ? file : new Blob([file as Uint8Array<ArrayBuffer>]);
  const progress = new Progress(blob.size, options.onProgress);
  return blob.size <= postLimit ? post(blob, to, options, progress) : tus(blob, to, options, progress);
}

async function post(
  blob: Blob,
  to: Destination,
  options: UploadOptions,
  progress: Progress,
): Promise<UploadResult> {
  const url = new URL(to.postUrl);
  if (options.archiveMode !== undefined) {
    url.searchParams.set("archive_mode", options.archiveMode);
  }
  if (options.profile !== undefined) {
    url.searchParams.set("cid_profile", options.profile);
  }
  const form = new FormData();
  // Before the file: the server reads the parts in order, and the file part is streamed.
  if (options.keyvalues !== undefined) {
    form.append("keyvalues", JSON.stringify(options.keyvalues));
  }
  form.append("file", blob, nameOf(blob, options));
  progress.report(0);
  const response = await fetch(url, {
    method: "POST",
    headers: to.headers,
    body: form,
    signal: options.signal ?? null,
  });
  if (!response.ok) {
    throw await CairnError.fromResponse(response);
  }
  const result = (await response.json()) as UploadResult;
  progress.report(blob.size);
  return result;
}

function tus(blob: Blob, to: Destination, options: UploadOptions, progress: Progress): Promise<TusUpload> {
  const metadata: Record<string, string> = { filename: nameOf(blob, options) };
  if (blob.type !== "") {
    metadata.filetype = blob.type;
  }
  if (options.archiveMode !== undefined) {
    metadata.archive_mode = options.archiveMode;
  }
  if (options.profile !== undefined) {
    metadata.cid_profile = options.profile;
  }
  if (options.keyvalues !== undefined) {
    metadata.keyvalues = JSON.stringify(options.keyvalues);
  }
  return new Promise((resolve, reject) => {
    let operationId: number | null = null;
    const upload = new Upload(blob, {
      endpoint: to.tusEndpoint,
      headers: to.headers,
      metadata,
      chunkSize: TUS_CHUNK_BYTES,
      fileReader: blobReader,
      // Uploads are not resumed across sessions (a Blob has nothing to tell it from another of
      // the same size), so their URLs are not stored either.
      storeFingerprintForResuming: false,
      onProgress: (bytesSent) => progress.report(bytesSent),
      onAfterResponse: (_request, response) => {
        const named = response.getHeader("Cairn-Operation-Id");
        if (named !== undefined && named !== null) {
          operationId = Number(named);
        }
      },
      onSuccess: () => {
        options.signal?.removeEventListener("abort", abort);
        // Set when the upload was created, which comes before any success.
        const tusUrl = upload.url as string;
        resolve({ id: lastSegment(tusUrl), operationId, cid: null, tusUrl });
      },
      onError: (error) => {
        options.signal?.removeEventListener("abort", abort);
        reject(tusError(error));
      },
    });
    function abort(this: AbortSignal): void {
      // Nothing will resume it: delete what the server holds. A failed delete changes nothing
      // for the caller, and the server expires the upload anyway.
      upload.abort(true).catch(() => undefined);
      reject(this.reason);
    }
    options.signal?.addEventListener("abort", abort, { once: true });
    upload.start();
  });
}

/** A refusal as a {@link CairnError}; a network failure (after tus-js-client's retries) as it is. */
function tusError(error: Error): Error {
  const response = error instanceof DetailedError ? error.originalResponse : null;
  return response === null ? error : CairnError.fromBody(response.getStatus(), response.getBody());
}

/** The name `blob` is sent under. */
function nameOf(blob: Blob, options: UploadOptions): string {
  return options.name ?? (blob instanceof File && blob.name !== "" ? blob.name : UNNAMED);
}

function lastSegment(url: string): string {
  return new URL(url).pathname.split("/").pop() ?? "";
}

/**
 * Reads a `Blob` for tus-js-client one chunk at a time, as bytes both its HTTP stacks send (its
 * Node stack takes no `Blob`), so one code path serves browsers and Node.
 */
const blobReader = {
  openFile(input: Blob) {
    return Promise.resolve({
      size: input.size,
      async slice(start: number, end: number) {
        const bytes = new Uint8Array(await input.slice(start, end).arrayBuffer());
        // tus-js-client measures a chunk by its `size`, which bytes lack.
        return { value: Object.assign(bytes, { size: bytes.length }), done: end >= input.size };
      },
      close() {},
    });
  },
};

/**
 * The caller's `onProgress`, told only of progress: a chunk sent again after a failure starts
 * from the server's offset, and the count holds still rather than going back.
 */
class Progress {
  readonly #total: number;
  readonly #onProgress: UploadOptions["onProgress"];
  #reported = -1;

  constructor(total: number, onProgress: UploadOptions["onProgress"]) {
    this.#total = total;
    this.#onProgress = onProgress;
  }

  report(bytesSent: number): void {
    if (bytesSent > this.#reported) {
      this.#reported = bytesSent;
      this.#onProgress?.(bytesSent, this.#total);
    }
  }
}
