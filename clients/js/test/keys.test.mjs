// Credentials: what a refused one looks like to the caller, and keys that can do less than the
// account's token.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CairnError } from "../dist/index.js";
import { client, unique } from "./support.mjs";

/** What `promise` rejected with; fails the test if it resolved. */
async function refusal(promise) {
  return promise.then(
    (value) => assert.fail(`resolved with ${JSON.stringify(value)}`),
    (error) => error,
  );
}

test("a bad token is a CairnError with status 401 and Cairn's code and message", async () => {
  const error = await refusal(client({ token: "cairn_not_a_real_token" }).uploads.list());
  assert.ok(error instanceof CairnError, String(error));
  assert.equal(error.name, "CairnError");
  assert.equal(error.status, 401);
  assert.equal(error.code, "invalid_token");
  assert.match(error.message, /not valid|revoked/);
});

test("no token at all is a CairnError unauthorized, on uploads too", async () => {
  const error = await refusal(client({ token: undefined }).upload(new TextEncoder().encode("x")));
  assert.ok(error instanceof CairnError, String(error));
  assert.equal(error.status, 401);
  assert.equal(error.code, "unauthorized");
});

test("a key limited to uploading uploads, is refused the rest, and stops working once revoked", async () => {
  const name = unique("uploader");
  const key = await client().keys.create({ name, scopes: ["upload"] });
  assert.match(key.key, /^cairn_/);
  const listed = (await client().keys.list()).find((one) => one.id === key.id);
  assert.equal(listed?.name, name);
  assert.deepEqual(listed.scopes, ["upload"]);
  assert.equal(listed.key, undefined, "a listed key does not show its secret");

  const uploader = client({ token: key.key });
  const sent = await uploader.upload(new TextEncoder().encode("sent with a key\n"));
  assert.equal(sent.status, "completed");
  const forbidden = await refusal(uploader.uploads.list());
  assert.equal(forbidden.status, 403);
  assert.equal(forbidden.code, "forbidden");

  await client().keys.revoke(key.id);
  assert.equal((await client().keys.list()).some((one) => one.id === key.id), false);
  const revoked = await refusal(uploader.upload(new TextEncoder().encode("sent too late\n")));
  assert.equal(revoked.status, 401);
  assert.equal(revoked.code, "invalid_token");
  const again = await refusal(client().keys.revoke(key.id));
  assert.equal(again.status, 404);
  assert.equal(again.code, "not_found");
});
