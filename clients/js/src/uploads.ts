/**
 * What the account uploaded (`/api/uploads`): listed by filters and key-values, renamed and
 * retagged, deleted.
 *
 * @module
 */

import { segment, type Api } from "./http.js";
import type { KeyValues, OperationStatus, UploadChanges, UploadPage, UploadRecord } from "./records.js";

/** Which uploads to list, and which page; every field is optional. */
export interface UploadFilter {
  /** Key-values the uploads must all have (up to 16). */
  kv?: KeyValues;
  /** Only uploads with this name, matched as `match` says (default `exact`). */
  name?: string;
  match?: "exact" | "iexact" | "partial" | "ipartial";
  /** Only uploads with this root CID. */
  cid?: string;
  /** Only uploads in these statuses. */
  status?: OperationStatus[];
  /** Only uploads made before or after these times (RFC 3339). */
  before?: string;
  after?: string;
  /** Only uploads sent through this upload link (its id). */
  link?: string;
  /** The `nextCursor` of the page before. */
  cursor?: string;
  /** Page size, 1 to 1000 (default 50). */
  limit?: number;
}

/** The account's uploads, newest first (a credential with the `read` scope to list). */
export class Uploads {
  readonly #api: Api;

  constructor(api: Api) {
    this.#api = api;
  }

  /** One page of the uploads `filter` selects. */
  list(filter: UploadFilter = {}): Promise<UploadPage> {
    const { kv, status, ...rest } = filter;
    const query = {
      ...rest,
      // `key:value`, split by the server at the first colon.
      kv: kv === undefined ? undefined : Object.entries(kv).map(([key, value]) => `${key}:${value}`),
      status: status?.join(","),
    };
    return this.#api.json("GET", `${this.#api.uploadUrl}/api/uploads`, { query });
  }

  /** One upload, by its id. */
  get(id: string): Promise<UploadRecord> {
    return this.#api.json("GET", this.#url(id));
  }

  /** Rename an upload or change its key-values (merged: `null` removes a key). */
  update(id: string, changes: UploadChanges): Promise<UploadRecord> {
    return this.#api.json("PATCH", this.#url(id), { body: changes });
  }

  /** Delete an upload: its content is no longer kept for the account. Deleting it again is no error. */
  delete(id: string): Promise<void> {
    return this.#api.json("DELETE", this.#url(id));
  }

  #url(id: string): string {
    return `${this.#api.uploadUrl}/api/uploads/${segment(id)}`;
  }
}
