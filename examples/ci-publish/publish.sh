#!/usr/bin/env bash
# publish.sh DIR NAME: publish the built site in DIR to Cairn and move the IPNS name NAME (a
# label of the account's, or its k51... name) to it, as a CI job's deploy step.
#
# Needs the `cairn` command and jq, and CAIRN_URL, CAIRN_ACCOUNT_URL and CAIRN_TOKEN (a key
# with the `upload` and `names` scopes: `cairn key create --scope upload,names --name ci`).
# CAIRN_GATEWAY_URL, the gateway to print links to, defaults to CAIRN_URL.
#
# The first run makes the name (labelled NAME); every later one points it at the new upload.
# Prints the CID, the name and both gateway URLs; in GitHub Actions also sets the step's
# outputs `cid`, `name` and `url` (the IPNS URL, for the deployment's environment).
set -euo pipefail

dir=${1:?usage: publish.sh DIR NAME}
name=${2:?usage: publish.sh DIR NAME}
: "${CAIRN_URL:?set CAIRN_URL to the upload host of Cairn}"
: "${CAIRN_ACCOUNT_URL:?set CAIRN_ACCOUNT_URL to the account host of Cairn}"
: "${CAIRN_TOKEN:?set CAIRN_TOKEN to a key with the upload and names scopes}"
gateway=${CAIRN_GATEWAY_URL:-$CAIRN_URL}
gateway=${gateway%/}

# `cairn upload DIR ... --json`, which prints one JSON line, whose `error` says why when the
# upload failed (and then exits 1).
upload() {
  local answer
  if ! answer=$(cairn upload "$dir" "$@" --json); then
    echo "publish.sh: uploading $dir failed: ${answer:-see above}" >&2
    return 1
  fi
  printf '%s\n' "$answer"
}

# The name as the account keeps it, by its label or its k51... name; empty before the first run.
existing=$(cairn name list --json |
  jq -r --arg name "$name" '.results[] | select(.label == $name or .name == $name) | .name')

if [[ -z $existing && $name == k51* ]]; then
  echo "publish.sh: the account has no name $name; give a label to make one" >&2
  exit 1
elif [[ -n $existing ]]; then
  # `cairn upload` packs the directory into a CAR here (its CID is the one `cairn cid DIR`
  # prints, checked by the server), waits until it is stored, then moves the name to it.
  uploaded=$(upload --publish "$existing")
  cid=$(jq -r .cid <<<"$uploaded")
  record=$(jq -c .published <<<"$uploaded")
else
  uploaded=$(upload --wait)
  cid=$(jq -r .cid <<<"$uploaded")
  record=$(cairn name create "$cid" --name "$name" --json)
fi
ipns=$(jq -r .name <<<"$record")
echo "uploaded $dir: $cid"
jq -r '"name \(.label // .name): \(.name) -> \(.value) (sequence \(.sequence))"' <<<"$record"

# What any IPFS client will see: the record Cairn's router serves, its signature verified.
resolved=$(cairn name resolve "$ipns")
if [[ $resolved != "/ipfs/$cid" ]]; then
  echo "publish.sh: $ipns resolves to $resolved, not /ipfs/$cid" >&2
  exit 1
fi
echo "gateway: $gateway/ipfs/$cid/"
echo "ipns:    $gateway/ipns/$ipns/"

if [[ -n ${GITHUB_OUTPUT:-} ]]; then
  printf 'cid=%s\nname=%s\nurl=%s\n' "$cid" "$ipns" "$gateway/ipns/$ipns/" >>"$GITHUB_OUTPUT"
fi
