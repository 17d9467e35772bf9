"""Uploads a file with tuspy (the official Python TUS client) in PATCHes of CHUNK bytes, for
the paths bench. tuspy sends each PATCH with `requests.patch`, so on a connection of its own.

Usage: python tuspy_upload.py ENDPOINT FILE CHUNK [TOKEN]
Prints "<upload URL> <seconds>": the time from the creation request to the last 204, taken
here, so Python's start is not counted.
"""

import sys
import time

from tusclient import client
from tusclient.exceptions import TusCommunicationError

endpoint, path, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3])
headers = {"Authorization": f"Bearer {sys.argv[4]}"} if len(sys.argv) > 4 else {}

started = time.perf_counter()
tus = client.TusClient(endpoint, headers=headers)
# A name, as a user's upload has: with no metadata tuspy sends an empty Upload-Metadata
# header, which @tus/server 2.4.5 refuses ("400 Invalid upload-metadata"; Cairn takes it).
uploader = tus.uploader(path, chunk_size=chunk, metadata={"filename": "upload.bin"})
try:
    uploader.upload()
except TusCommunicationError as error:
    sys.exit(f"{error}: the server answered {error.response_content!r}")
seconds = time.perf_counter() - started
print(f"{uploader.url} {seconds:.6f}", flush=True)
