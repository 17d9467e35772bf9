// What the tests share: the running `cairn serve` they talk to (from the environment), clients
// of it, deterministic file contents, and the CID `cairn cid` computes for them.
//
// CAIRN_URL, CAIRN_ACCOUNT_URL: the server's upload and account hosts.
// CAIRN_TOKEN: a token of an account whose upload limit is small (a few MiB at most), so that
//   a file over it, which goes by TUS, stays quick to send.
// CAIRN_BIN: the `cairn` binary, whose `cid` command says what each upload's CID must be.
// `crates/cairn/tests/js_client.rs` starts the server and sets them.

import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

import { Cairn } from "../dist/index.js";

function required(name) {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set: see test/support.mjs for what the tests need`);
  }
  return value;
}

export const server = {
  url: required("CAIRN_URL"),
  accountUrl: required("CAIRN_ACCOUNT_URL"),
  token: required("CAIRN_TOKEN"),
};

/** A client of the test account, with `options` over its settings. */
export function client(options = {}) {
  return new Cairn({ ...server, ...options });
}

/** The test account's upload limit, as the account host says it. */
export async function uploadLimit() {
  const response = await fetch(`${server.accountUrl}/api/upload-limit`, {
    headers: { Authorization: `Bearer ${server.token}` },
  });
  if (!response.ok) {
    throw new Error(`GET /api/upload-limit answered ${response.status}`);
  }
  return (await response.json()).limit;
}

/** `length` deterministic bytes, different for each `seed` (xorshift32). */
export function bytes(length, seed) {
  const out = new Uint8Array(length);
  let state = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    out[i] = state & 0xff;
  }
  return out;
}

/** A name no other test run uses, for labels and key-values. */
export function unique(prefix) {
  return `${prefix}-${randomUUID()}`;
}

/** What `cairn cid` prints for `content` (bytes, or the path of a file or directory). */
export async function cidOf(content) {
  const bin = required("CAIRN_BIN");
  if (typeof content === "string") {
    return (await promisify(execFile)(bin, ["cid", content])).stdout.trim();
  }
  const dir = await mkdtemp(join(tmpdir(), "cairn-js-"));
  try {
    const file = join(dir, "content");
    await writeFile(file, content);
    return await cidOf(file);
  } finally {
    await rm(dir, { recursive: true });
  }
}
