/**
 * {@link Api}: JSON requests to Cairn's two hosts, with the credential, and non-2xx answers as
 * {@link CairnError}s.
 *
 * @module
 */

import { CairnError } from "./errors.js";

/** A query string's parameters; an array repeats its name (`kv=a:1&kv=b:2`). */
export type Query = Record<string, string | number | readonly string[] | undefined>;

/** What a JSON request sends besides its method and URL. */
export interface RequestParts {
  query?: Query;
  /** Sent as JSON. */
  body?: unknown;
  signal?: AbortSignal | undefined;
}

/** Where Cairn is and who is asking. */
export class Api {
  /** The upload host, without a trailing slash. */
  readonly uploadUrl: string;
  /** The account host, without a trailing slash, when it was given. */
  readonly #accountUrl: string | undefined;
  readonly #token: string | undefined;

  constructor(uploadUrl: string, accountUrl: string | undefined, token: string | undefined) {
    this.uploadUrl = withoutTrailingSlash(uploadUrl);
    this.#accountUrl = accountUrl === undefined ? undefined : withoutTrailingSlash(accountUrl);
    this.#token = token;
  }

  /** Whether requests carry a credential (an upload link's holder has none). */
  get hasToken(): boolean {
    return this.#token !== undefined;
  }

  /** The account host, where keys and the upload limit live; a `TypeError` naming `what` without it. */
  accountUrl(what: string): string {
    if (this.#accountUrl === undefined) {
      throw new TypeError(`${what} is on Cairn's account host: give accountUrl to new Cairn()`);
    }
    return this.#accountUrl;
  }

  /** The `Authorization` header for the credential, if there is one. */
  authorization(): Record<string, string> {
    return this.#token === undefined ? {} : { Authorization: `Bearer ${this.#token}` };
  }

  /**
   * `method` on `url` (`path` under a host) with the credential: the JSON answer, `undefined`
   * for an empty one (`204`), a {@link CairnError} for an answer that is not 2xx.
   */
  async json<T>(method: string, url: string, parts: RequestParts = {}): Promise<T> {
    const headers: Record<string, string> = { ...this.authorization(), Accept: "application/json" };
    let body: string | undefined;
    if (parts.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(parts.body);
    }
    const response = await fetch(withQuery(url, parts.query), {
      method,
      headers,
      body,
      signal: parts.signal,
    });
    if (!response.ok) {
      throw await CairnError.fromResponse(response);
    }
    const text = await response.text();
    return (text === "" ? undefined : JSON.parse(text)) as T;
  }
}

/** `url` with `query`'s defined parameters appended. */
function withQuery(url: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) {
      continue;
    }
    const values = typeof value === "object" ? value : [String(value)];
    for (const one of values) {
      params.append(name, one);
    }
  }
  const text = params.toString();
  return text === "" ? url : `${url}${url.includes("?") ? "&" : "?"}${text}`;
}

/** `name` as one segment of a URL path. */
export function segment(name: string | number): string {
  return encodeURIComponent(String(name));
}

function withoutTrailingSlash(url: string): string {
  return url.replace(/\/+$/, "");
}
