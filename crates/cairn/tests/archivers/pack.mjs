// Writes an archive of DIR's contents with npm's `tar` or `archiver`:
//   node pack.mjs tar|tgz|archiver-zip|archiver-tgz OUT DIR
import { createWriteStream } from "node:fs";
import * as tar from "tar";
import { TarArchive, ZipArchive } from "archiver";

const [kind, out, dir] = process.argv.slice(2);

if (kind === "tar" || kind === "tgz") {
  // What `npm pack` does: the directory's entries, `./` first.
  await tar.c({ file: out, cwd: dir, gzip: kind === "tgz" }, ["."]);
} else if (kind === "archiver-zip" || kind === "archiver-tgz") {
  const archive =
    kind === "archiver-zip" ? new ZipArchive() : new TarArchive({ gzip: true });
  const output = createWriteStream(out);
  const closed = new Promise((resolve, reject) => {
    output.on("close", resolve);
    archive.on("error", reject);
    archive.on("warning", reject);
  });
  archive.pipe(output);
  archive.directory(dir, false);
  await archive.finalize();
  await closed;
} else {
  throw new Error(`unknown kind ${kind}`);
}
