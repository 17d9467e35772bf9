// The page's script: gets an upload link, sends the chosen file through it with cairn-client
// (one POST, or resumable TUS when the file is over the account's upload limit), and shows the
// progress, the CID, and whether the page's backend heard of the upload from Cairn's webhook.
//
// The link comes from the page's fragment, `#link=URL` (a link made elsewhere, with curl say:
// a fragment is never sent to any server, so the link's secret stays out of logs and `Referer`
// headers), else from the backend that served the page (`POST /links`, as
// examples/node-backend answers it: a fresh link for each file).

import { Cairn, CairnError } from "cairn-client";

/** How long Cairn may take to store a file sent by TUS before the page stops waiting. */
const STORING_TIMEOUT_MS = 10 * 60_000;
/** How long the backend may take to hear of the upload from Cairn's webhook. */
const WEBHOOK_TIMEOUT_MS = 60_000;
const WEBHOOK_POLL_MS = 500;
/** Every upload link's URL has this before its secret; what comes before is Cairn's upload host. */
const LINK_PATH = "/api/upload/link/";

const page = {
  root: document.getElementById("upload"),
  file: document.getElementById("file"),
  progress: document.getElementById("progress"),
  status: document.getElementById("status"),
  result: document.getElementById("result"),
  cid: document.getElementById("cid"),
  gateway: document.getElementById("gateway"),
  webhook: document.getElementById("webhook"),
};

page.file.addEventListener("change", async () => {
  const [file] = page.file.files;
  if (file === undefined) return;
  page.file.disabled = true;
  try {
    await upload(file);
  } catch (error) {
    show("failed", error instanceof CairnError ? `${error.code}: ${error.message}` : String(error));
  } finally {
    page.file.disabled = false;
  }
});

async function upload(file) {
  page.result.hidden = true;
  page.progress.value = 0;
  show("uploading", "Asking for an upload link…");
  const grant = await uploadLink();
  const cairn = new Cairn({ url: grant.cairnUrl, uploadLimit: grant.uploadLimit });

  show("uploading", `Sending ${file.name}…`);
  const sent = await cairn.uploadThroughLink(grant.link, file, {
    onProgress(bytesSent, bytesTotal) {
      page.progress.max = bytesTotal;
      page.progress.value = bytesSent;
    },
  });
  // A POST's answer has the CID already; a TUS upload's comes once Cairn has stored it all.
  show("storing", "Sent; Cairn is storing it…");
  const { cid } = await cairn.waitForCid(sent, { timeoutMs: STORING_TIMEOUT_MS });

  page.cid.value = cid;
  page.gateway.href = page.gateway.textContent = `${grant.cairnUrl}/ipfs/${cid}`;
  page.result.hidden = false;
  show("done", `Stored ${file.name}.`);
  if (grant.link.id !== undefined) {
    await confirmedByWebhook(grant.link.id, cid);
  } else {
    showWebhook("unknown", "This link was not made by a backend: nobody to ask.");
  }
}

/**
 * The link to upload through: `{ link, uploadLimit, cairnUrl }`. `uploadLimit` is the largest
 * file the account takes in one POST (larger ones go by TUS): only the backend can read it, so a
 * link from the fragment may carry it as `&uploadLimit=N`, else cairn-client's default applies.
 */
async function uploadLink() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const url = fragment.get("link");
  if (url !== null) {
    const hostEnd = url.indexOf(LINK_PATH);
    if (hostEnd === -1) {
      throw new Error(`#link= must be an upload link's url (…${LINK_PATH}cairnlink_…), not ${url}`);
    }
    const limit = fragment.get("uploadLimit");
    return {
      link: { url, tusEndpoint: `${url}/tus` },
      uploadLimit: limit === null ? undefined : Number(limit),
      cairnUrl: url.slice(0, hostEnd),
    };
  }
  const response = await fetch("links", { method: "POST" });
  if (!response.ok) {
    throw new Error(
      `no upload link: this page's server answered ${response.status} to POST /links. ` +
        "Open the page from examples/node-backend, or with #link=URL",
    );
  }
  return response.json();
}

/**
 * Ask the backend whether Cairn told it, by a webhook it verified, of the upload through
 * `linkId`: the backend learns of each upload from Cairn itself, not from this page.
 */
async function confirmedByWebhook(linkId, cid) {
  showWebhook("waiting", "Waiting for Cairn's webhook to reach it…");
  const deadline = Date.now() + WEBHOOK_TIMEOUT_MS;
  while (Date.now() < deadline) {
    // Not reaching the backend for a moment is no answer yet: the upload itself is done.
    const response = await fetch(`links/${encodeURIComponent(linkId)}/upload`).catch(() => undefined);
    if (response?.ok) {
      const heard = await response.json();
      if (heard.cid === cid) {
        showWebhook("verified", `Verified Cairn's signed ${heard.type} webhook for ${heard.cid}.`);
      } else {
        showWebhook("mismatch", `Cairn's webhook names ${heard.cid}, not ${cid}.`);
      }
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, WEBHOOK_POLL_MS));
  }
  showWebhook("not-heard", "No webhook from Cairn yet: is one registered for this backend?");
}

/** Where the upload is (the page's `data-state`: idle, uploading, storing, done, failed). */
function show(state, text) {
  page.root.dataset.state = state;
  page.status.textContent = text;
}

/** What the backend heard (`data-state`: waiting, verified, mismatch, not-heard, unknown). */
function showWebhook(state, text) {
  page.webhook.dataset.state = state;
  page.webhook.textContent = text;
}
