// The account's uploads: found again by key-values, paged, retagged and deleted.

import assert from "node:assert/strict";
import { test } from "node:test";

import { client, unique } from "./support.mjs";

test("key-values given on upload find the uploads again, and can be changed", async () => {
  const cairn = client();
  const run = unique("kv");
  const send = (text, kind) =>
    cairn.upload(new TextEncoder().encode(`${text}\n`), { name: `${text}.txt`, keyvalues: { run, kind } });
  const avatar = await send("avatar", "image");
  const banner = await send("banner", "image");
  const notes = await send("notes", "text");
  const ids = async (filter) => (await cairn.uploads.list(filter)).uploads.map((upload) => upload.id);

  // Newest first.
  assert.deepEqual(await ids({ kv: { run } }), [notes.id, banner.id, avatar.id]);
  assert.deepEqual(await ids({ kv: { run, kind: "image" } }), [banner.id, avatar.id]);
  assert.deepEqual(await ids({ kv: { run, kind: "video" } }), []);
  assert.deepEqual(await ids({ kv: { run }, name: "BANNER", match: "ipartial" }), [banner.id]);

  const first = await cairn.uploads.list({ kv: { run }, limit: 2 });
  assert.equal(first.uploads.length, 2);
  assert.ok(first.nextCursor, "a next page");
  const second = await cairn.uploads.list({ kv: { run }, limit: 2, cursor: first.nextCursor });
  assert.deepEqual(second.uploads.map((upload) => upload.id), [avatar.id]);

  const changes = { name: "notes.md", keyvalues: { kind: "image", run: null } };
  const changed = await cairn.uploads.update(notes.id, changes);
  assert.equal(changed.name, "notes.md");
  assert.deepEqual(changed.keyvalues, { kind: "image" });
  assert.deepEqual(await ids({ kv: { run } }), [banner.id, avatar.id]);
});

test("a deleted upload is no longer listed, and deleting it again is no error", async () => {
  const cairn = client();
  const run = unique("delete");
  const sent = await cairn.upload(new TextEncoder().encode("short-lived\n"), { keyvalues: { run } });
  await cairn.uploads.delete(sent.id);
  assert.deepEqual((await cairn.uploads.list({ kv: { run } })).uploads, []);
  await cairn.uploads.delete(sent.id);
});
