/**
 * {@link Cairn}: the client. Uploads choose POST or TUS by size, upload links need no
 * credential, and `waitForCid` follows the work the server still does.
 *
 * @module
 */

import { Api } from "./http.js";
import { Keys, Links } from "./keys.js";
import { Names } from "./names.js";
import type { LinkRecord, UploadLimit } from "./records.js";
import { send, type SentUpload, type UploadOptions } from "./transfer.js";
import { Uploads } from "./uploads.js";
import { operationCompleted, tusUploadCompleted, type CompletedUpload } from "./wait.js";

/**
 * The upload limit of an account made with no other (Cairn's default, 100 MiB): what files are
 * sent by POST within when the account's own limit cannot be read.
 */
const DEFAULT_UPLOAD_LIMIT = 100 * 1024 * 1024;

/** An upload link's TUS endpoint is its URL with this after it. */
const LINK_TUS_SUFFIX = "/tus";

/** Where Cairn is, and the credential. */
export interface CairnOptions {
  /** The upload host (`cairn serve --listen`), such as `https://upload.example.com`. */
  url: string;
  /** The account host (`--account-listen`), where keys live. */
  accountUrl?: string;
  /** An account's token or a key's secret; none for a page that only uploads through links. */
  token?: string;
  /**
   * The largest file to send in one POST (bigger ones go by TUS). Default: the account's limit,
   * read once from the upload host, else 100 MiB (Cairn's default). A page that uploads
   * through a link cannot read its account's limit: its backend can pass it here.
   */
  uploadLimit?: number;
}

/** How long to wait. */
export interface WaitOptions {
  /** Stops waiting; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Stops waiting after this many milliseconds, rejecting with a `TimeoutError`. */
  timeoutMs?: number;
}

/** A client of one Cairn service. */
export class Cairn {
  /** Keys (account host). */
  readonly keys: Keys;
  /** Upload links. */
  readonly links: Links;
  /** The account's uploads. */
  readonly uploads: Uploads;
  /** IPNS names. */
  readonly names: Names;

  readonly #api: Api;
  readonly #givenUploadLimit: number | undefined;
  #uploadLimit: Promise<number> | undefined;

  constructor(options: CairnOptions) {
    this.#api = new Api(options.url, options.accountUrl, options.token);
    this.#givenUploadLimit = options.uploadLimit;
    this.keys = new Keys(this.#api);
    this.links = new Links(this.#api);
    this.uploads = new Uploads(this.#api);
    this.names = new Names(this.#api);
  }

  /**
   * Upload a file: one POST to `/api/upload` when it is within the upload limit, else TUS at
   * `/api/upload/tus`, in chunks. A file sent by POST has its `cid` in the answer (unless it is
   * an archive to extract); a TUS upload's comes later: give the answer to {@link Cairn.waitForCid}.
   * A refusal is a {@link CairnError}.
   */
  async upload(file: Blob | Uint8Array, options: UploadOptions = {}): Promise<SentUpload> {
    const to = {
      postUrl: `${this.#api.uploadUrl}/api/upload`,
      tusEndpoint: `${this.#api.uploadUrl}/api/upload/tus`,
      headers: this.#api.authorization(),
    };
    return send(file, to, await this.uploadLimit(), options);
  }

  /**
   * Upload a file through an upload link, with no credential: `link` is the link as
   * `links.create` made it, or its `url` or `tusEndpoint`. Sent as {@link Cairn.upload} sends; the
   * link's name, key-values and archive mode apply.
   */
  async uploadThroughLink(
    link: string | Pick<LinkRecord, "url" | "tusEndpoint">,
    file: Blob | Uint8Array,
    options: UploadOptions = {},
  ): Promise<SentUpload> {
    return send(file, { ...linkEndpoints(link), headers: {} }, await this.uploadLimit(), options);
  }

  /**
   * Wait until an upload has its CID: `target` is what an upload answered, or an operation's
   * id (or its upload's id). With a credential, follows the operation's events
   * (`/api/operations/{id}/events`), polling where the stream cannot be had; without one (a
   * page that used a link), polls the TUS upload's URL. An upload that failed rejects with a
   * {@link CairnError} whose `status` is `undefined`.
   */
  async waitForCid(
    target: number | string | SentUpload,
    options: WaitOptions = {},
  ): Promise<CompletedUpload> {
    const signal = deadline(options);
    if (typeof target === "object" && target.cid !== null) {
      return { id: target.id, operationId: target.operationId, cid: target.cid };
    }
    if (this.#api.hasToken) {
      const id = typeof target === "object" ? (target.operationId ?? target.id) : target;
      return operationCompleted(this.#api, String(id), signal);
    }
    if (typeof target === "object" && "tusUrl" in target) {
      return tusUploadCompleted(target.tusUrl, signal);
    }
    throw new TypeError(
      "with no token, only a TUS upload's URL tells its CID: this upload was sent by POST and is " +
        "still processed (an archive to extract). Send archives through a link by TUS (uploadLimit: 0) " +
        "or whole (archiveMode: 'preserve').",
    );
  }

  /**
   * The largest file {@link Cairn.upload} sends by POST: as given, else the account's (asked of
   * the upload host once), else 100 MiB. A backend can hand it to a page that has only a link.
   */
  uploadLimit(): Promise<number> {
    this.#uploadLimit ??= this.#askUploadLimit();
    return this.#uploadLimit;
  }

  async #askUploadLimit(): Promise<number> {
    if (this.#givenUploadLimit !== undefined) {
      return this.#givenUploadLimit;
    }
    if (!this.#api.hasToken) {
      return DEFAULT_UPLOAD_LIMIT;
    }
    try {
      // The upload host answers it too, and (unlike the account host) to pages elsewhere.
      const url = `${this.#api.uploadUrl}/api/upload-limit`;
      return (await this.#api.json<UploadLimit>("GET", url)).limit;
    } catch {
      // A key without `upload` or `read`: the default is the best guess, and the server still
      // refuses an over-large POST with `payload_too_large`.
      return DEFAULT_UPLOAD_LIMIT;
    }
  }
}

/** Where `link` takes a POST and creates TUS uploads. */
function linkEndpoints(link: string | Pick<LinkRecord, "url" | "tusEndpoint">): {
  postUrl: string;
  tusEndpoint: string;
} {
  if (typeof link !== "string") {
    if (link.url === undefined || link.tusEndpoint === undefined) {
      throw new TypeError("a link's URLs are in the answer that made it only, never in links.list()");
    }
    return { postUrl: link.url, tusEndpoint: link.tusEndpoint };
  }
  const postUrl = link.endsWith(LINK_TUS_SUFFIX) ? link.slice(0, -LINK_TUS_SUFFIX.length) : link;
  return { postUrl, tusEndpoint: `${postUrl}${LINK_TUS_SUFFIX}` };
}

/** A signal for the caller's `signal` and `timeoutMs`, whichever comes first. */
function deadline({ signal, timeoutMs }: WaitOptions): AbortSignal {
  const signals = [signal, timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs)];
  return AbortSignal.any(signals.filter((one): one is AbortSignal => one !== undefined));
}
