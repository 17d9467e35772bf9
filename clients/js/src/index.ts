/**
 * A client of Cairn, the IPFS content upload service, for browsers and Node 22+.
 *
 * - {@link Cairn}: uploads (POST or resumable TUS, chosen by size), uploads through links with no
 *   credential, waiting for an upload's CID, and the account's keys, links, uploads and names.
 * - {@link CairnError}: what the server refused, with its `status`, `code` and `message`.
 * - The API's records (`UploadResult`, `KeyRecord`, ...), as `openapi.yaml` describes them.
 *
 * @packageDocumentation
 */

export { Cairn, type CairnOptions, type WaitOptions } from "./client.js";
export { CairnError } from "./errors.js";
export type { ResolvedName } from "./ipns.js";
export type { Keys, Links, NewKey, NewLink } from "./keys.js";
export type { Names } from "./names.js";
export type * from "./records.js";
export type { SentUpload, TusUpload, UploadOptions } from "./transfer.js";
export type { UploadFilter, Uploads } from "./uploads.js";
export type { CompletedUpload } from "./wait.js";
