// Verifying a webhook as the Standard Webhooks specification says, with node:crypto only:
// https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
//
// The key is the secret after `whsec_`, base64-decoded. The signed content is
// `${webhook-id}.${webhook-timestamp}.${body}`, with the body's bytes exactly as received (so
// verify before parsing). `webhook-signature` holds space-separated `v1,<base64 HMAC-SHA256>`
// entries, any of which may match (a sender signs with each secret while one is rotated).

import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * How far `webhook-timestamp` may be from now, either way: a captured request replayed later
 * is refused, and a clock a little off is not.
 */
export const TOLERANCE_SECONDS = 5 * 60;

const SECRET_PREFIX = "whsec_";

/** The request was not signed by whoever holds the secret, or not lately: answer it 401. */
export class WebhookVerificationError extends Error {
  name = "WebhookVerificationError";
}

/** Verifies webhooks signed with one secret. */
export class Webhook {
  #key;

  /** `secret`: what Cairn answered when the webhook was made (`whsec_` and base64). */
  constructor(secret) {
    const base64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) {
      throw new TypeError("a webhook secret is whsec_ and base64, as Cairn answered it");
    }
    this.#key = Buffer.from(base64, "base64");
  }

  /**
   * The event `body` (a Buffer) holds, parsed, once its headers (lower-case names, as node:http
   * gives them) prove it was signed with the secret within {@link TOLERANCE_SECONDS} of `now`.
   * Throws a {@link WebhookVerificationError} saying what is wrong otherwise.
   */
  verify(body, headers, now = new Date()) {
    const id = single(headers["webhook-id"]);
    const timestamp = single(headers["webhook-timestamp"]);
    const signatures = single(headers["webhook-signature"]);
    if (!id || !timestamp || !signatures) {
      throw new WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature");
    }
    const sentAt = Number(timestamp);
    if (!/^\d+$/.test(timestamp) || Math.abs(now.getTime() / 1000 - sentAt) > TOLERANCE_SECONDS) {
      throw new WebhookVerificationError(`webhook-timestamp ${timestamp} is not within ${TOLERANCE_SECONDS} s of now`);
    }
    const expected = createHmac("sha256", this.#key).update(`${id}.${timestamp}.`).update(body).digest();
    const matches = signatures.split(" ").some((entry) => {
      const [version, signature = ""] = entry.split(",", 2);
      const given = Buffer.from(signature, "base64");
      // timingSafeEqual throws on different lengths; a length says nothing about the key.
      return version === "v1" && given.length === expected.length && timingSafeEqual(given, expected);
    });
    if (!matches) {
      throw new WebhookVerificationError("no signature in webhook-signature matches the body");
    }
    return JSON.parse(body.toString("utf8"));
  }
}

/** A header as node:http gives it (a string, but for Set-Cookie), or `undefined` when absent. */
function single(value) {
  return typeof value === "string" ? value : undefined;
}
