// Upload links: a page holding no key uploads through one, by POST and by TUS, and learns its
// CIDs; the backend lists the link's uses and revokes it.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Cairn, CairnError } from "../dist/index.js";
import { bytes, cidOf, client, server, unique, uploadLimit } from "./support.mjs";

test("a page with no token uploads through a link by POST and by TUS, and waits for the CID", async () => {
  const keyvalues = { campaign: unique("link") };
  const link = await client().links.create({ uploads: 2, name: "from the page", keyvalues });
  // What the page is given: the link and, from its backend, the account's upload limit.
  const page = new Cairn({ url: server.url, uploadLimit: await uploadLimit() });

  const note = new TextEncoder().encode("a note through a link\n");
  const posted = await page.uploadThroughLink(link.url, note);
  assert.equal(posted.cid, await cidOf(note));
  assert.equal(posted.link, link.id);

  const big = bytes((await uploadLimit()) + 1, 5);
  const progress = [];
  const tus = await page.uploadThroughLink(link.tusEndpoint, big, {
    onProgress: (bytesSent) => progress.push(bytesSent),
  });
  assert.ok(tus.tusUrl, "sent by TUS");
  assert.equal(progress.at(-1), big.length);
  assert.equal((await page.waitForCid(tus, { timeoutMs: 60_000 })).cid, await cidOf(big));

  const throughIt = await client().uploads.list({ link: link.id });
  assert.deepEqual(throughIt.uploads.map((upload) => upload.id).sort(), [posted.id, tus.id].sort());
  for (const upload of throughIt.uploads) {
    assert.equal(upload.name, "from the page");
    assert.deepEqual(upload.keyvalues, keyvalues);
  }
  const listed = (await client().links.list()).find((one) => one.id === link.id);
  assert.equal(listed?.uses, 2);
  assert.equal(listed.url, undefined, "a listed link does not show its secret");

  const used = await page.uploadThroughLink(link, note).catch((error) => error);
  assert.ok(used instanceof CairnError, String(used));
  assert.equal(used.status, 403);
  assert.equal(used.code, "link_used");
});

test("a revoked link is no longer listed and takes no upload", async () => {
  const link = await client().links.create();
  await client().links.revoke(link.id);
  assert.equal((await client().links.list()).some((one) => one.id === link.id), false);
  const refused = await new Cairn({ url: server.url })
    .uploadThroughLink(link, new TextEncoder().encode("too late\n"))
    .catch((error) => error);
  assert.ok(refused instanceof CairnError, String(refused));
  assert.equal(refused.status, 401);
  assert.equal(refused.code, "invalid_link");
});
