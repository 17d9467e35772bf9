/**
 * Keys (account host) and upload links (upload host): credentials that can do less than an
 * account's token, for an app's backend to hand out.
 *
 * @module
 */

import { segment, type Api } from "./http.js";
import type { KeyRecord, KeyRequest, LinkRecord, LinkRequest } from "./records.js";

/** A key just made: the only time its secret, `key`, is shown. */
export type NewKey = KeyRecord & { key: string };

/** An upload link just made: the only time its URLs, which carry its secret, are shown. */
export type NewLink = LinkRecord & { url: string; tusEndpoint: string };

/** The account's keys, on the account host (a credential with the `keys` scope). */
export class Keys {
  readonly #api: Api;

  constructor(api: Api) {
    this.#api = api;
  }

  /** Make a key that can do no more than the caller's (`POST /api/keys`). */
  create(request: KeyRequest): Promise<NewKey> {
    return this.#api.json("POST", `${this.#url()}/api/keys`, { body: request });
  }

  /** The account's live keys, never their secrets. */
  async list(): Promise<KeyRecord[]> {
    return (await this.#api.json<{ keys: KeyRecord[] }>("GET", `${this.#url()}/api/keys`)).keys;
  }

  /** Revoke a key and the upload links it made, on every node at once. */
  revoke(id: number): Promise<void> {
    return this.#api.json("DELETE", `${this.#url()}/api/keys/${segment(id)}`);
  }

  #url(): string {
    return this.#api.accountUrl("keys");
  }
}

/**
 * Upload links: URLs that take a few uploads with no other credential, for a browser that
 * should hold no key. Made with the `upload` scope; listed and revoked with `keys` (all of the
 * account's) or `upload` (those the key made).
 */
export class Links {
  readonly #api: Api;

  constructor(api: Api) {
    this.#api = api;
  }

  /** Make a link (`POST /api/upload-links`); give the page its `url` or `tusEndpoint`. */
  create(request: LinkRequest = {}): Promise<NewLink> {
    return this.#api.json("POST", `${this.#api.uploadUrl}/api/upload-links`, { body: request });
  }

  /** The live links the caller may manage, with their uses (never their URLs). */
  async list(): Promise<LinkRecord[]> {
    const url = `${this.#api.uploadUrl}/api/upload-links`;
    return (await this.#api.json<{ links: LinkRecord[] }>("GET", url)).links;
  }

  /** Revoke a link: it takes no more uploads. */
  revoke(id: string): Promise<void> {
    return this.#api.json("DELETE", `${this.#api.uploadUrl}/api/upload-links/${segment(id)}`);
  }
}
