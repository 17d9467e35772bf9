// A backend for the page in ../browser-link-upload, on node:http and cairn-client alone:
//
//   GET  /                    the page (index.html, upload.js, vendor/cairn-client.js)
//   POST /links               makes an upload link with the backend's key, for one visitor's file
//   POST /webhooks/cairn      Cairn's webhooks: the signature verified (401 when it is bad or
//                             stale), each `upload.completed` logged and recorded
//   GET  /links/{id}/upload   what Cairn's webhook said of the upload through a link (404 until then)
//
// The visitors hold no key: the key stays here, and what they upload is known here from Cairn
// itself, by a signed webhook, not from what a page says. Settings come from the environment
// (README.md): CAIRN_URL, CAIRN_ACCOUNT_URL, CAIRN_TOKEN (a key with the `upload` scope),
// CAIRN_WEBHOOK_SECRET, and PORT and HOST for this server.

import { access, readFile } from "node:fs/promises";
import { createServer } from "node:http";

import { Cairn, CairnError } from "cairn-client";

import { Webhook, WebhookVerificationError } from "./standard-webhooks.mjs";

/**
 * How long a link takes uploads. A TUS upload can be resumed only while its link lives, so this
 * is as long as a large file may take to send.
 */
const LINK_LIFETIME_SECONDS = 60 * 60;
/** The largest file a visitor may send: Cairn refuses more (413) before storing a byte of it. */
const MAX_UPLOAD_BYTES = 1 << 30;
/** Every upload through this backend's links carries it, to find them (`GET /api/uploads?kv=`). */
const APP_KEYVALUES = { app: "cairn-example-node-backend" };
/** Cairn's webhook bodies are a few KiB; more is not from Cairn. */
const MAX_WEBHOOK_BYTES = 1 << 20;

const PAGE_DIR = new URL("../browser-link-upload/", import.meta.url);
const PAGE_FILES = new Map([
  ["/", { file: "index.html", type: "text/html; charset=utf-8" }],
  ["/upload.js", { file: "upload.js", type: "text/javascript; charset=utf-8" }],
  ["/vendor/cairn-client.js", { file: "vendor/cairn-client.js", type: "text/javascript; charset=utf-8" }],
]);

const settings = {
  cairnUrl: required("CAIRN_URL").replace(/\/+$/, ""),
  accountUrl: required("CAIRN_ACCOUNT_URL").replace(/\/+$/, ""),
  token: required("CAIRN_TOKEN"),
  webhookSecret: required("CAIRN_WEBHOOK_SECRET"),
  host: process.env.HOST ?? "127.0.0.1",
  port: Number(process.env.PORT ?? 3000),
};

const cairn = new Cairn({ url: settings.cairnUrl, accountUrl: settings.accountUrl, token: settings.token });
let webhook;
try {
  webhook = new Webhook(settings.webhookSecret);
} catch (error) {
  exit(`CAIRN_WEBHOOK_SECRET: ${error.message}`);
}

/** What Cairn's webhooks told, kept in memory: a real app writes it to its database. */
const heard = {
  /** The `webhook-id`s handled: a delivery comes at least once, every attempt with the same id. */
  deliveries: new Set(),
  /** The upload through each link, by the link's id. */
  uploadsByLink: new Map(),
};

// Checked before listening, so that a wrong setting stops the server now, not a visitor later.
await access(new URL("vendor/cairn-client.js", PAGE_DIR)).catch(() => {
  exit("the page's bundle is missing: run `npm ci && npm run build` in examples/browser-link-upload");
});
const uploadLimit = await accountUploadLimit().catch((error) => {
  exit(`asking Cairn for the account's upload limit: ${error.message}`);
});

const server = createServer((request, response) => {
  route(request, response).catch((error) => {
    console.error(`${request.method} ${request.url}: ${error.stack ?? error}`);
    if (!response.headersSent) {
      sendJson(response, 500, { error: "internal", message: "the backend failed; its log says why" });
    }
  });
});
server.listen(settings.port, settings.host, () => {
  const origin = `http://${settings.host}:${server.address().port}`;
  console.log(`listening on ${origin}`);
  console.log(`the page is at ${origin}/; Cairn's webhooks go to ${origin}/webhooks/cairn`);
});

async function route(request, response) {
  const { pathname } = new URL(request.url, "http://backend");
  const linkUpload = /^\/links\/([^/]+)\/upload$/.exec(pathname);
  const pageFile = PAGE_FILES.get(pathname);
  if (request.method === "POST" && pathname === "/links") {
    await makeLink(response);
  } else if (request.method === "POST" && pathname === "/webhooks/cairn") {
    await receiveWebhook(request, response);
  } else if (request.method === "GET" && linkUpload !== null) {
    tellUpload(decodeURIComponent(linkUpload[1]), response);
  } else if (request.method === "GET" && pageFile !== undefined) {
    await servePageFile(pageFile, response);
  } else {
    sendJson(response, 404, { error: "not_found", message: `no ${request.method} ${pathname} here` });
  }
}

/**
 * `POST /links`: a link for one upload, and what the page needs to send through it. Anyone who
 * reaches this backend may have one: a real app makes links for its signed-in users only, and
 * tags each with the user in its key-values.
 */
async function makeLink(response) {
  let link;
  try {
    link = await cairn.links.create({
      expiresIn: LINK_LIFETIME_SECONDS,
      uploads: 1,
      maxBytes: MAX_UPLOAD_BYTES,
      // Visitors' files are stored as they are, a zip included: each upload is one file, whose
      // CID the page learns with no key (an archive extracted later would need one).
      archiveMode: "preserve",
      keyvalues: APP_KEYVALUES,
    });
  } catch (error) {
    if (!(error instanceof CairnError)) throw error;
    console.error(`making an upload link: Cairn answered ${error.status} ${error.code}: ${error.message}`);
    sendJson(response, 502, { error: "cairn_refused", message: `Cairn refused to make a link: ${error.message}` });
    return;
  }
  const { id, url, tusEndpoint, expiresAt } = link;
  // The page cannot read the account's upload limit (the account host answers no other
  // origin), and needs it to send larger files by TUS rather than have a POST refused.
  sendJson(response, 201, { link: { id, url, tusEndpoint, expiresAt }, uploadLimit, cairnUrl: settings.cairnUrl });
}

/** `POST /webhooks/cairn`: an event from Cairn, taken only when its signature verifies. */
async function receiveWebhook(request, response) {
  // The bytes as received: the signature is over them, not over JSON parsed and written again.
  const body = await bodyOf(request, MAX_WEBHOOK_BYTES);
  if (body === undefined) {
    sendJson(response, 413, { error: "payload_too_large", message: `over ${MAX_WEBHOOK_BYTES} bytes` });
    return;
  }
  let event;
  try {
    event = webhook.verify(body, request.headers);
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error;
    console.log(`webhook refused (401): ${error.message}`);
    sendJson(response, 401, { error: "invalid_signature", message: error.message });
    return;
  }
  const deliveryId = request.headers["webhook-id"];
  if (!heard.deliveries.has(deliveryId)) {
    heard.deliveries.add(deliveryId);
    record(event, deliveryId);
  }
  // Any 2xx within 10 s, or Cairn sends it again.
  response.writeHead(204).end();
}

/** Log a verified event, and keep an `upload.completed` through a link for the page to ask of. */
function record(event, deliveryId) {
  if (event.type !== "upload.completed") {
    console.log(`webhook ${deliveryId} verified: ${event.type}`);
    return;
  }
  const upload = event.data;
  console.log(
    `webhook ${deliveryId} verified: upload.completed ${upload.cid} ${JSON.stringify(upload.name)} ` +
      `(${upload.size} bytes, upload ${upload.id}, link ${upload.link ?? "none"})`,
  );
  if (upload.link !== null) {
    heard.uploadsByLink.set(upload.link, {
      type: event.type,
      cid: upload.cid,
      uploadId: upload.id,
      name: upload.name,
      size: upload.size,
      completedAt: event.timestamp,
    });
  }
}

/** `GET /links/{id}/upload`: the upload through link `id`, once Cairn's webhook told of it. */
function tellUpload(linkId, response) {
  const upload = heard.uploadsByLink.get(linkId);
  if (upload === undefined) {
    sendJson(response, 404, { error: "not_heard", message: "Cairn has told of no upload through this link yet" });
  } else {
    sendJson(response, 200, upload);
  }
}

async function servePageFile({ file, type }, response) {
  // Read at each request, so that a rebuilt bundle is served without a restart.
  const bytes = await readFile(new URL(file, PAGE_DIR));
  response
    .writeHead(200, { "content-type": type, "cache-control": "no-cache", "x-content-type-options": "nosniff" })
    .end(bytes);
}

/** The account's upload limit, which needs a key (`GET /api/upload-limit` on the account host). */
async function accountUploadLimit() {
  const response = await fetch(`${settings.accountUrl}/api/upload-limit`, {
    headers: { authorization: `Bearer ${settings.token}` },
  });
  if (!response.ok) {
    throw await CairnError.fromResponse(response);
  }
  return (await response.json()).limit;
}

/** The request's body, or `undefined` when it is over `limit` bytes (read to its end, dropped). */
async function bodyOf(request, limit) {
  const chunks = [];
  let size = 0;
  for await (const chunk of request) {
    size += chunk.length;
    if (size <= limit) chunks.push(chunk);
  }
  return size <= limit ? Buffer.concat(chunks) : undefined;
}

function sendJson(response, status, value) {
  response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
}

function required(name) {
  const value = process.env[name];
  if (!value) exit(`${name} is not set (README.md says what each setting is)`);
  return value;
}

function exit(message) {
  console.error(`node-backend: ${message}`);
  process.exit(1);
}
