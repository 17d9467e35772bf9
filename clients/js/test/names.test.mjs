// IPNS names: made, pointed elsewhere, listed, and resolved from the router's signed record,
// verified by the client.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Cairn, CairnError } from "../dist/index.js";
import { client, server, unique } from "./support.mjs";

test("a name follows the uploads it is pointed at, and resolves to the newest, verified", async () => {
  const cairn = client();
  const first = await cairn.upload(new TextEncoder().encode("version one\n"));
  const second = await cairn.upload(new TextEncoder().encode("version two\n"));
  const label = unique("site");

  const made = await cairn.names.create({ cid: first.cid, label });
  assert.match(made.name, /^k51/);
  assert.equal(made.cid, first.cid);
  assert.equal(made.sequence, 0);
  // A name needs no credential to resolve.
  const anyone = new Cairn({ url: server.url });
  const resolved = await anyone.names.resolve(made.name);
  assert.equal(resolved.cid, first.cid);
  assert.equal(resolved.value, `/ipfs/${first.cid}`);
  assert.equal(resolved.sequence, 0);
  assert.ok(Date.parse(resolved.validUntil) > Date.now());

  const moved = await cairn.names.publish(label, second.cid);
  assert.equal(moved.sequence, 1);
  const now = await cairn.names.resolve(label);
  assert.equal(now.name, made.name);
  assert.equal(now.cid, second.cid);
  assert.equal(now.sequence, 1);

  const listed = (await cairn.names.list()).find((one) => one.name === made.name);
  assert.equal(listed?.label, label);
  assert.equal(listed.cid, second.cid);

  await cairn.names.delete(label);
  const gone = await cairn.names.get(made.name).catch((error) => error);
  assert.ok(gone instanceof CairnError, String(gone));
  assert.equal(gone.status, 404);
  assert.equal(gone.code, "not_found");
});
