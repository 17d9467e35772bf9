// Uploading with a token: POST within the account's upload limit, TUS over it (through a
// connection cut half-way, too), archives extracted later, and failures that come after the
// answer.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";

import { CairnError } from "../dist/index.js";
import { bytes, cidOf, client, server, unique, uploadLimit } from "./support.mjs";

/** Three of the client's 8 MiB TUS chunks, the last one partial. */
const OVER_TWO_CHUNKS = (16 << 20) + 12_345;

test("a small file goes by POST and has the CID cairn cid computes at once", async () => {
  const content = new TextEncoder().encode("a small file\n");
  const keyvalues = { test: unique("post") };
  const progress = [];
  const sent = await client().upload(content, {
    name: "small.txt",
    keyvalues,
    onProgress: (...event) => progress.push(event),
  });
  assert.equal(sent.cid, await cidOf(content));
  assert.equal(sent.status, "completed");
  assert.equal(sent.name, "small.txt");
  assert.equal(sent.size, content.length);
  assert.deepEqual(sent.keyvalues, keyvalues);
  assert.equal("tusUrl" in sent, false, "sent by POST");
  assert.deepEqual(progress, [
    [0, content.length],
    [content.length, content.length],
  ]);
  // Already complete: nothing to wait for.
  const completed = { id: sent.id, operationId: sent.operationId, cid: sent.cid };
  assert.deepEqual(await client().waitForCid(sent), completed);
});

test("a file over the upload limit goes by TUS with steady progress; waitForCid gives its CID", async () => {
  const content = bytes(OVER_TWO_CHUNKS, 1);
  assert.ok(content.length > (await uploadLimit()), "the test account's upload limit must be smaller");
  const progress = [];
  const cairn = client();
  const sent = await cairn.upload(new Blob([content]), {
    name: "big.bin",
    onProgress: (bytesSent, bytesTotal) => progress.push({ bytesSent, bytesTotal }),
  });
  assert.equal(sent.cid, null);
  assert.ok(sent.tusUrl.startsWith(`${server.url}/api/upload/tus/`), sent.tusUrl);
  assert.equal(typeof sent.operationId, "number");
  assertSteady(progress, content.length);
  const expected = await cidOf(content);
  const completed = await cairn.waitForCid(sent, { timeoutMs: 60_000 });
  assert.deepEqual(completed, { id: sent.id, operationId: sent.operationId, cid: expected });
  // By the operation's id alone, as a backend told it later would wait.
  assert.equal((await cairn.waitForCid(sent.operationId)).cid, expected);
  const record = await cairn.uploads.get(sent.id);
  assert.equal(record.name, "big.bin");
  assert.equal(record.cid, expected);
});

test("a TUS upload whose connection is cut half-way resumes and gets the right CID", async () => {
  const proxy = await cuttingProxy(new URL(server.url), 5 << 20);
  try {
    const content = bytes(OVER_TWO_CHUNKS, 2);
    const progress = [];
    const cairn = client({ url: proxy.url });
    const sent = await cairn.upload(content, {
      name: "resumed.bin",
      onProgress: (bytesSent, bytesTotal) => progress.push({ bytesSent, bytesTotal }),
    });
    assert.equal(proxy.cuts(), 1, "the proxy cut the upload's connection");
    assertSteady(progress, content.length);
    assert.equal((await cairn.waitForCid(sent, { timeoutMs: 60_000 })).cid, await cidOf(content));
  } finally {
    await proxy.close();
  }
});

test("an archive is extracted after the answer, and waitForCid gives its directory's CID", async () => {
  const dir = await mkdtemp(join(tmpdir(), "cairn-js-tree-"));
  try {
    const tree = join(dir, "tree");
    await mkdir(join(tree, "docs"), { recursive: true });
    await writeFile(join(tree, "index.html"), "<h1>hello</h1>\n");
    await writeFile(join(tree, "docs", "notes.txt"), "some notes\n");
    const archive = join(dir, "site.tar");
    await promisify(execFile)("tar", ["-cf", archive, "-C", tree, "."]);
    const cairn = client();
    const sent = await cairn.upload(new Blob([await readFile(archive)]), { name: "site.tar" });
    assert.equal(sent.kind, "archive");
    assert.equal(sent.archiveFormat, "tar");
    assert.equal((await cairn.waitForCid(sent, { timeoutMs: 60_000 })).cid, await cidOf(tree));
  } finally {
    await rm(dir, { recursive: true });
  }
});

test("an upload that fails after it was taken rejects waitForCid with the server's reason", async () => {
  // A zip's signature, then nothing of a zip: TUS takes the bytes, the operation refuses them.
  const notAZip = bytes(OVER_TWO_CHUNKS, 3);
  notAZip.set([0x50, 0x4b, 0x03, 0x04]);
  const cairn = client();
  const sent = await cairn.upload(notAZip, { name: "broken.zip", archiveMode: "extract" });
  const failed = await cairn.waitForCid(sent, { timeoutMs: 60_000 }).then(
    () => assert.fail("waitForCid resolved for a broken archive"),
    (error) => error,
  );
  assert.ok(failed instanceof CairnError, String(failed));
  assert.equal(failed.code, "invalid_archive");
  assert.equal(failed.status, undefined);
  assert.match(failed.message, /not a readable zip/);
});

test("an aborted TUS upload rejects with the signal's reason", async () => {
  const stop = new AbortController();
  const reason = new Error("the user closed the page");
  const sending = client().upload(bytes(OVER_TWO_CHUNKS, 4), {
    signal: stop.signal,
    onProgress: (bytesSent) => bytesSent > 0 && stop.abort(reason),
  });
  await assert.rejects(sending, (error) => error === reason);
});

/** `progress` never goes back, and ends at `total`, which every event names. */
function assertSteady(progress, total) {
  assert.ok(progress.length >= 2, `progress was reported ${progress.length} time(s)`);
  for (const [i, { bytesSent, bytesTotal }] of progress.entries()) {
    assert.equal(bytesTotal, total);
    const before = progress[i - 1]?.bytesSent ?? -1;
    assert.ok(bytesSent > before, `went from ${before} to ${bytesSent}`);
  }
  assert.equal(progress.at(-1).bytesSent, total);
}

/** How long the cutting proxy waits after each piece of the upload it forwards. */
const PACE_MS = 5;

/**
 * A TCP proxy to `target`, reading the client slowly, that cuts the first connection over which
 * the client sends more than `cutAfter` bytes, as a network failure would, and forwards the rest
 * untouched.
 */
async function cuttingProxy(target, cutAfter) {
  let cuts = 0;
  const sockets = new Set();
  const proxy = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let sent = 0;
    client.on("data", (chunk) => {
      sent += chunk.length;
      if (cuts === 0 && sent > cutAfter) {
        cuts += 1;
        client.destroy();
        upstream.destroy();
        return;
      }
      upstream.write(chunk);
      // Read slowly, as a slow network does: the client reports progress for bytes still in
      // the socket's buffers, which the cut loses, so the resumed upload starts below it.
      client.pause();
      setTimeout(() => client.resume(), PACE_MS);
    });
    upstream.pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", close).on("close", close);
    upstream.on("error", close).on("close", close);
  });
  await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${proxy.address().port}`,
    cuts: () => cuts,
    close: () => {
      for (const socket of sockets) {
        socket.destroy();
      }
      return new Promise((resolve) => proxy.close(resolve));
    },
  };
}
