/**
 * {@link CairnError}: what the client throws when Cairn refuses a request or an upload fails.
 *
 * @module
 */

import type { ErrorBody } from "./records.js";

/** The code of an answer that did not carry Cairn's error object (a proxy's error page, say). */
const NOT_CAIRNS = "http_error";

/** How much of a foreign error body the message quotes. */
const QUOTED_CHARS = 200;

/**
 * Cairn refused a request (any answer that is not 2xx), or an upload's operation failed.
 *
 * Failures to reach the server at all are not `CairnError`s: they are what `fetch` throws.
 */
export class CairnError extends Error {
  override readonly name = "CairnError";

  /**
   * The answer's HTTP status; `undefined` when the request was answered but the work it began
   * failed later (an archive that cannot be extracted, found while `waitForCid` waits).
   */
  readonly status: number | undefined;

  /**
   * Cairn's machine-readable code (`invalid_token`, `payload_too_large`, `link_used`, ...: the
   * table in Cairn's README, "Errors"), or `http_error` for an answer that was not Cairn's.
   */
  readonly code: string;

  constructor(code: string, message: string, status?: number) {
    super(message);
    this.code = code;
    this.status = status;
  }

  /** The error that an answer with `status` and the body `text` carries. */
  static fromBody(status: number, text: string): CairnError {
    const body = parseErrorBody(text);
    if (body === undefined) {
      const quoted = text.trim().slice(0, QUOTED_CHARS);
      const message = `the server answered ${status} without Cairn's error object`;
      return new CairnError(NOT_CAIRNS, quoted === "" ? message : `${message}: ${quoted}`, status);
    }
    return new CairnError(body.error, body.message, status);
  }

  /** The error that the non-2xx `response` carries (its body is read). */
  static async fromResponse(response: Response): Promise<CairnError> {
    return CairnError.fromBody(response.status, await response.text());
  }
}

/** `text` as Cairn's `{"error": code, "message": text}`, or `undefined` when it is not that. */
function parseErrorBody(text: string): ErrorBody | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  return isErrorBody(body) ? body : undefined;
}

/** Whether `value` has the shape of Cairn's error object. */
export function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== "object" || value === null) {
    return false;
  }
  const { error, message } = value as Record<string, unknown>;
  return typeof error === "string" && typeof message === "string";
}
