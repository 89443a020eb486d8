#!/usr/bin/env bash
# platform.account's reconcile, as a stdio program (docs/stdworker.md): one
# JSON request on stdin, one JSON response on stdout, exit 2 for a terminal
# failure. It simulates the cloud: the account is a JSON file under the
# provider config's state_dir (default $TMPDIR/converge-catalog), and its id
# is derived from its name, so running it twice changes nothing. Needs jq.
set -euo pipefail

req=$(cat)
name=$(jq -r '.resource.name' <<<"$req")
email=$(jq -r '.spec.email' <<<"$req")
org_unit=$(jq -r '.spec.org_unit // "workloads"' <<<"$req")
state=$(jq -r --arg tmp "${TMPDIR:-/tmp}" '.config.state_dir // ($tmp + "/converge-catalog")' <<<"$req")

# Deleting the resource deletes the account; the finalizer is cleared when
# this exits 0.
if [[ $(jq -r '.reaction.trigger' <<<"$req") == deleteRequested ]]; then
	rm -f "$state/platform/accounts/$name.json"
	exit 0
fi

# A deterministic 12-digit id: the same name always gets the same account.
account_id=$(printf '%012d' "$(printf '%s' "$name" | cksum | cut -d' ' -f1)")

status=$(jq -n --arg id "$account_id" --arg email "$email" --arg ou "$org_unit" \
	'{account_id: $id, email: $email, org_unit: $ou}')
dir="$state/platform/accounts"
mkdir -p "$dir"
printf '%s\n' "$status" >"$dir/$name.json.tmp"
mv "$dir/$name.json.tmp" "$dir/$name.json"

jq -n --argjson status "$status" '{status: $status}'
