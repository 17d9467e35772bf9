"""Uploads a file with the official Python client, tuspy, resumably.

Usage: python tuspy_upload.py ENDPOINT TOKEN FILE URL_STORAGE [STOP_AT]
Prints "resumed <url>" when a stored upload is picked up, then "stopped <offset> <url>" (when
STOP_AT is given) or "done <url>".
"""
import sys

from tusclient import client
from tusclient.storage.filestorage import FileStorage

endpoint, token, path, storage = sys.argv[1:5]
stop_at = int(sys.argv[5]) if len(sys.argv) > 5 else None

tus = client.TusClient(endpoint, headers={"Authorization": f"Bearer {token}"})
uploader = tus.uploader(
    path,
    chunk_size=256 * 1024,
    metadata={"filename": "tuspy.bin"},
    store_url=True,
    url_storage=FileStorage(storage),
)
if uploader.url:
    print(f"resumed {uploader.url}", flush=True)
if stop_at is not None:
    uploader.upload(stop_at=stop_at)
    print(f"stopped {uploader.offset} {uploader.url}", flush=True)
else:
    uploader.upload()
    print(f"done {uploader.url}", flush=True)
