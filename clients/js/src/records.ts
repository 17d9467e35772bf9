/**
 * What Cairn's HTTP API sends and takes, as TypeScript types: each mirrors the schema of the
 * same name in Cairn's `openapi.yaml` (served at `/api/openapi.json`), which has the full
 * description of every field.
 *
 * @module
 */

/** Where an upload or pin is: `pending` and `processing` until it ends `completed` or `failed`. */
export type OperationStatus = "pending" | "processing" | "completed" | "failed";

/** The settings that decide an upload's CID (`unixfs-v1-2025` unless the server is set otherwise). */
export type CidProfile = "unixfs-v1-2025" | "kubo-cidv1-legacy" | "unixfs-v0-2015";

/**
 * What to do with an archive (zip, tar, 7z, ...): `extract` stores the directory of its entries
 * (processed after the answer, so the CID comes later), `preserve` stores the archive as one file.
 */
export type ArchiveMode = "extract" | "preserve";

/** Tags to find uploads by: at most 16 pairs, keys of 1 to 64 bytes, values of at most 256 bytes. */
export type KeyValues = Record<string, string>;

/** What a key may do. `all` is every scope, now and later. */
export type Scope = "upload" | "read" | "delete" | "pins" | "keys" | "names" | "all";

/** An error as the server words it; also what a failed upload carries. */
export interface ErrorBody {
  /** Machine-readable code, such as `invalid_token` or `payload_too_large`. */
  error: string;
  /** Human-readable explanation. */
  message: string;
}

/** An upload as `POST /api/upload` answers it. */
export interface UploadResult {
  /** The upload's id (`uploads.get`, `uploads.delete`). */
  id: string;
  /** The root CID; `null` while the server still works on it (an archive being extracted). */
  cid: string | null;
  name: string;
  size: number;
  /** The media type the bytes bear out. */
  mimeType: string;
  /** The operation that processes it (`waitForCid` follows it). */
  operationId: number;
  status: OperationStatus;
  createdAt: string;
  keyvalues: KeyValues;
  /** The id of the upload link it came through, if any. */
  link: string | null;
  /** What the bytes were stored as; `null` until they were looked at. */
  kind: "file" | "archive" | "car" | null;
  archiveFormat: "zip" | "tar" | "tar.gz" | "tar.bz2" | "tar.xz" | "tar.zst" | "7z" | null;
}

/** An upload as the account's list shows it. */
export interface UploadRecord extends UploadResult {
  /** Whether its content is kept and provided to the IPFS network. */
  pinned: boolean;
  /** Why it failed, once it did. */
  error: ErrorBody | null;
}

/** One page of `GET /api/uploads`, newest first. */
export interface UploadPage {
  uploads: UploadRecord[];
  /** Give it as `cursor` for the next page; `null` on the last one. */
  nextCursor: string | null;
}

/** What `PATCH /api/uploads/{id}` changes; what is left out stays. */
export interface UploadChanges {
  name?: string;
  /** Merged into the upload's: a string sets a key, `null` removes it. */
  keyvalues?: Record<string, string | null>;
}

/** An operation: the work that gives an upload (or pin) its CID. */
export interface OperationRecord {
  id: number;
  uploadId: string;
  operation: "upload" | "tus_upload" | "car_import" | "pin";
  status: OperationStatus;
  statusMessage: string;
  progressPercent: number;
  cid: string | null;
  error: ErrorBody | null;
  name: string;
  size: number;
  mimeType: string;
  archiveMode: string | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
  kind: "file" | "archive" | "car" | null;
  archiveFormat: string | null;
}

/** A TUS upload's state, from its URL (which needs no key for an upload made through a link). */
export interface UploadState {
  id: string;
  /** The bytes stored durably. */
  offset: number;
  length: number | null;
  /** Every byte is in; the operation processes them. */
  complete: boolean;
  operationId: number | null;
  status: OperationStatus | null;
  progressPercent: number | null;
  cid: string | null;
  error: ErrorBody | null;
}

/** The caller's account, as `GET /api/upload-limit` on the account host answers it. */
export interface UploadLimit {
  account: string;
  /** The largest single `POST /api/upload`, in bytes; larger files go by TUS. */
  limit: number;
  storedBytes: number;
  quota: number | null;
}

/** A key to make; it can do no more than the key that makes it. */
export interface KeyRequest {
  scopes: Scope[];
  /** To recognise it by. */
  name?: string;
  /** Seconds until it expires (not with `expiresAt`). */
  expiresIn?: number;
  /** When it expires, RFC 3339 (not with `expiresIn`). */
  expiresAt?: string;
  /** Uploads it may begin. */
  maxUses?: number;
  /** Browser origins (`scheme://host[:port]`) it may be used from; none is anywhere. */
  origins?: string[];
  /** The largest upload it may send. */
  maxUploadBytes?: number;
}

/** A key as listed; `key`, its secret, only in the answer that made it. */
export interface KeyRecord {
  id: number;
  name: string;
  /** The secret's first characters, to recognise it by. */
  prefix: string;
  scopes: Scope[];
  createdAt: string;
  expiresAt: string | null;
  maxUses: number | null;
  /** Uploads it has begun. */
  uses: number;
  lastUsedAt: string | null;
  origins: string[];
  maxUploadBytes: number | null;
  /** The secret, for `new Cairn({ token })`: shown once, stored hashed. */
  key?: string;
}

/** An upload link to make; every field is optional. */
export interface LinkRequest {
  /** Seconds until it expires (default 3600, at most 7 days). */
  expiresIn?: number;
  /** The largest upload it takes. */
  maxBytes?: number;
  /** Media types its uploads may have (`image/png`, `image/*`); none is any. */
  mimeTypes?: string[];
  /** The name of its uploads, whatever they send. */
  name?: string;
  /** Tags for its uploads, over any they send. */
  keyvalues?: KeyValues;
  /** Its uploads' archive mode unless they name one. */
  archiveMode?: ArchiveMode;
  /** Uploads it takes (default 1). */
  uploads?: number;
}

/** An upload link as listed; `url` and `tusEndpoint`, which carry its secret, only when made. */
export interface LinkRecord {
  /** To revoke it by; an upload's `link`. */
  id: string;
  /** Where a page POSTs an upload (`uploadThroughLink`). */
  url?: string;
  /** Where a page creates a TUS upload. */
  tusEndpoint?: string;
  createdAt: string;
  expiresAt: string;
  maxBytes: number | null;
  mimeTypes: string[];
  name: string | null;
  keyvalues: KeyValues;
  archiveMode: ArchiveMode | null;
  /** Uploads it takes. */
  uploads: number;
  /** Uploads begun through it. */
  uses: number;
}

/** An IPNS name of the account's. */
export interface NameRecord {
  /** The IPNS name (`k51...`): `/ipns/{name}` on any gateway. */
  name: string;
  /** What the account calls it. */
  label: string | null;
  /** The CID it points at. */
  cid: string | null;
  /** Its record's value: `/ipfs/{cid}`. */
  value: string;
  /** One more at each `publish`. */
  sequence: number;
  /** When its current record stops being valid (it is re-signed well before). */
  expiresAt: string;
  createdAt: string;
  updatedAt: string;
}
