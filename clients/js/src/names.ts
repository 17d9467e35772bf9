/**
 * The account's IPNS names (`/api/names` on the upload host), and resolving any Ed25519 name
 * from the server's router, with the record verified here.
 *
 * @module
 */

import { CairnError } from "./errors.js";
import { segment, type Api } from "./http.js";
import { isIpnsName, verifyRecord, type ResolvedName } from "./ipns.js";
import type { NameRecord } from "./records.js";

/** The media type of a signed IPNS record (routing and trustless gateway specs). */
const IPNS_RECORD = "application/vnd.ipfs.ipns-record";

/**
 * IPNS names that follow the account's uploads. Each method takes a name (`k51...`) or the
 * label the account gave it.
 */
export class Names {
  readonly #api: Api;

  constructor(api: Api) {
    this.#api = api;
  }

  /** Make a name pointing at `cid`, with a label to call it by (credential scope `names`). */
  create(name: { cid: string; label?: string }): Promise<NameRecord> {
    return this.#api.json("POST", `${this.#api.uploadUrl}/api/names`, { body: name });
  }

  /** Point a name at `cid`: a new record, its sequence one more, signed and published. */
  publish(nameOrLabel: string, cid: string): Promise<NameRecord> {
    return this.#api.json("PUT", this.#url(nameOrLabel), { body: { cid } });
  }

  /** One of the account's names. */
  get(nameOrLabel: string): Promise<NameRecord> {
    return this.#api.json("GET", this.#url(nameOrLabel));
  }

  /** The account's names, oldest first. */
  async list(): Promise<NameRecord[]> {
    const url = `${this.#api.uploadUrl}/api/names`;
    return (await this.#api.json<{ results: NameRecord[] }>("GET", url)).results;
  }

  /** Stop republishing a name: its last record stays valid until it expires. */
  delete(nameOrLabel: string): Promise<void> {
    return this.#api.json("DELETE", this.#url(nameOrLabel));
  }

  /**
   * What a name points at now, from the signed record the server's router answers
   * (`/routing/v1/ipns/{name}`), verified here: the name's key, the signature, the validity.
   * A `k51...` name needs no credential; a label is looked up in the account first. A record
   * that does not verify is a {@link CairnError} `invalid_record`; a name with no record known,
   * `not_found`.
   */
  async resolve(nameOrLabel: string): Promise<ResolvedName> {
    const name = isIpnsName(nameOrLabel) ? nameOrLabel : (await this.get(nameOrLabel)).name;
    const response = await fetch(`${this.#api.uploadUrl}/routing/v1/ipns/${segment(name)}`, {
      headers: { Accept: IPNS_RECORD },
    });
    const type = response.headers.get("Content-Type")?.split(";")[0]?.trim();
    // The routing spec answers "no record" as a 200 of another type: Cairn's error object.
    if (!response.ok || type !== IPNS_RECORD) {
      throw await CairnError.fromResponse(response);
    }
    return verifyRecord(name, new Uint8Array(await response.arrayBuffer()), new Date());
  }

  #url(nameOrLabel: string): string {
    return `${this.#api.uploadUrl}/api/names/${segment(nameOrLabel)}`;
  }
}
