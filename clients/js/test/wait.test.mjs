// Waiting for a CID through a proxy in the way: the event stream is followed where it can be,
// polling takes over where it cannot, and a deadline ends a wait that gets no answer.

import assert from "node:assert/strict";
import { createServer, request as forward } from "node:http";
import { test } from "node:test";

import { bytes, cidOf, client, server, uploadLimit } from "./support.mjs";

const EVENTS = /^\/api\/operations\/[^/?]+\/events/;
const OPERATION = /^\/api\/operations\/[^/?]+$/;

/** A TUS upload sent straight to the server, and the CID it must get. */
async function sentByTus(seed) {
  const content = bytes((await uploadLimit()) + 1, seed);
  const sent = await client().upload(content);
  assert.ok(sent.tusUrl, "sent by TUS");
  return { sent, cid: await cidOf(content) };
}

test("waitForCid follows the event stream, where polling is refused", async () => {
  const { sent, cid } = await sentByTus(6);
  const proxy = await proxyToTheServer((path) => (OPERATION.test(path) ? "refuse" : "forward"));
  try {
    const completed = await client({ url: proxy.url }).waitForCid(sent, { timeoutMs: 30_000 });
    assert.equal(completed.cid, cid);
    assert.ok(proxy.seen.some((path) => EVENTS.test(path)), proxy.seen.join(", "));
  } finally {
    await proxy.close();
  }
});

test("waitForCid polls where the event stream is refused", async () => {
  const { sent, cid } = await sentByTus(7);
  const proxy = await proxyToTheServer((path) => (EVENTS.test(path) ? "refuse" : "forward"));
  try {
    const completed = await client({ url: proxy.url }).waitForCid(sent, { timeoutMs: 30_000 });
    assert.equal(completed.cid, cid);
    assert.ok(proxy.seen.some((path) => OPERATION.test(path)), proxy.seen.join(", "));
  } finally {
    await proxy.close();
  }
});

test("timeoutMs ends a wait that gets no answer, with a TimeoutError", async () => {
  const { sent } = await sentByTus(8);
  const proxy = await proxyToTheServer((path) => (EVENTS.test(path) ? "hold" : "refuse"));
  try {
    const started = Date.now();
    const waiting = client({ url: proxy.url }).waitForCid(sent, { timeoutMs: 300 });
    await assert.rejects(waiting, { name: "TimeoutError" });
    assert.ok(Date.now() - started < 10_000, "rejected at the deadline, not at the stream's silence limit");
  } finally {
    await proxy.close();
  }
});

/**
 * An HTTP proxy to the upload host. `choose(path)` says what becomes of each request: `forward`
 * it, `refuse` it with a proxy's 502 page, or `hold` it: answer 200 and then send nothing.
 * `seen` lists the paths asked for.
 */
async function proxyToTheServer(choose) {
  const target = new URL(server.url);
  const seen = [];
  const proxy = createServer((request, response) => {
    seen.push(request.url);
    switch (choose(request.url)) {
      case "refuse":
        response.writeHead(502, { "Content-Type": "text/html" }).end("<h1>502 Bad Gateway</h1>");
        return;
      case "hold":
        response.writeHead(200, { "Content-Type": "text/event-stream" }).flushHeaders();
        return;
      case "forward": {
        const { method, url: path, headers } = request;
        const options = { host: target.hostname, port: target.port, method, path, headers };
        const upstream = forward(options, (answer) => {
          response.writeHead(answer.statusCode, answer.headers);
          answer.pipe(response);
        });
        upstream.on("error", () => response.destroy());
        request.pipe(upstream);
      }
    }
  });
  await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${proxy.address().port}`,
    seen,
    close: () => {
      proxy.closeAllConnections();
      return new Promise((resolve) => proxy.close(resolve));
    },
  };
}
