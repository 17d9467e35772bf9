// node publish.mjs DIR NAME: what publish.sh does, with cairn-client instead of the `cairn`
// command: publish the built site in DIR to Cairn and move the IPNS name NAME (a label of the
// account's, or its k51... name) to it. The same settings (CAIRN_URL, CAIRN_ACCOUNT_URL,
// CAIRN_TOKEN, CAIRN_GATEWAY_URL), the same output, the same GitHub Actions outputs.
//
// cairn-client sends files, not directories: DIR goes as a tar (made by the system's `tar`),
// which Cairn extracts into the same tree, so the CID is still the one `cairn cid DIR` prints.

import { execFile } from "node:child_process";
import { appendFile, mkdtemp, rm } from "node:fs/promises";
import { openAsBlob } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

import { Cairn, CairnError } from "cairn-client";

/** How long Cairn may take to extract and store the site. */
const STORING_TIMEOUT_MS = 30 * 60_000;

async function main() {
  const [dir, name] = process.argv.slice(2);
  if (dir === undefined || name === undefined) {
    throw new Error("usage: node publish.mjs DIR NAME");
  }
  const url = required("CAIRN_URL");
  const gateway = (process.env.CAIRN_GATEWAY_URL || url).replace(/\/+$/, "");
  const cairn = new Cairn({ url, accountUrl: required("CAIRN_ACCOUNT_URL"), token: required("CAIRN_TOKEN") });

  const existing = (await cairn.names.list()).find((kept) => kept.label === name || kept.name === name);
  if (existing === undefined && name.startsWith("k51")) {
    throw new Error(`the account has no name ${name}; give a label to make one`);
  }

  const cid = await uploadDirectory(cairn, dir, name);
  const record =
    existing === undefined ? await cairn.names.create({ cid, label: name }) : await cairn.names.publish(existing.name, cid);
  console.log(`uploaded ${dir}: ${cid}`);
  console.log(`name ${record.label ?? record.name}: ${record.name} -> ${record.value} (sequence ${record.sequence})`);

  // What any IPFS client will see: the record Cairn's router serves, its signature verified.
  const resolved = await cairn.names.resolve(record.name);
  if (resolved.cid !== cid) {
    throw new Error(`${record.name} resolves to ${resolved.value}, not /ipfs/${cid}`);
  }
  console.log(`gateway: ${gateway}/ipfs/${cid}/`);
  console.log(`ipns:    ${gateway}/ipns/${record.name}/`);

  if (process.env.GITHUB_OUTPUT) {
    const outputs = `cid=${cid}\nname=${record.name}\nurl=${gateway}/ipns/${record.name}/\n`;
    await appendFile(process.env.GITHUB_OUTPUT, outputs);
  }
}

/** `dir` uploaded as a tar that Cairn extracts: the CID of the tree, once Cairn has stored it. */
async function uploadDirectory(cairn, dir, name) {
  const scratch = await mkdtemp(join(tmpdir(), "cairn-publish-"));
  try {
    const tarball = join(scratch, "site.tar");
    // `-C DIR .`: the archive holds DIR's contents, so Cairn's root is DIR itself.
    await promisify(execFile)("tar", ["-cf", tarball, "-C", dir, "."]);
    // Read from the disk as it is sent, by one POST or (over the account's limit) by TUS.
    const sent = await cairn.upload(await openAsBlob(tarball), { name: `${name}.tar`, archiveMode: "extract" });
    return (await cairn.waitForCid(sent, { timeoutMs: STORING_TIMEOUT_MS })).cid;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

function required(variable) {
  const value = process.env[variable];
  if (!value) {
    throw new Error(`${variable} is not set`);
  }
  return value;
}

main().catch((error) => {
  const why = error instanceof CairnError ? `Cairn answered ${error.code}: ${error.message}` : error.message;
  console.error(`publish.mjs: ${why}`);
  process.exit(1);
});
