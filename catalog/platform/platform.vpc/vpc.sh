#!/usr/bin/env bash
# platform.vpc's reconcile, as a stdio program (docs/stdworker.md). It
# simulates the cloud: the network is a JSON file under the provider
# config's state_dir (default $TMPDIR/converge-catalog), its id derived from
# its account and name. Needs jq.
set -euo pipefail

req=$(cat)
name=$(jq -r '.resource.name' <<<"$req")
account_id=$(jq -r '.spec.account_id // ""' <<<"$req")
cidr=$(jq -r '.spec.cidr' <<<"$req")
region=$(jq -r '.spec.region // "eu-west-1"' <<<"$req")
state=$(jq -r --arg tmp "${TMPDIR:-/tmp}" '.config.state_dir // ($tmp + "/converge-catalog")' <<<"$req")

# Deleting the resource deletes the network its status names (none if it
# never synced); the finalizer is cleared when this exits 0.
if [[ $(jq -r '.reaction.trigger' <<<"$req") == deleteRequested ]]; then
	file=$(jq -r '.status | if .account_id and .vpc_id then "\(.account_id)/\(.vpc_id).json" else "" end' <<<"$req")
	[[ -z "$file" ]] || rm -f "$state/platform/vpcs/$file"
	exit 0
fi

# In a landing zone the account id flows in before this runs: an empty one
# is a composition bug, not something a retry fixes.
if [[ -z "$account_id" ]]; then
	echo "spec.account_id: empty; a network needs the account it lives in" >&2
	exit 2
fi
prefix=${cidr#*/}
if ((prefix < 16 || prefix > 28)); then
	echo "spec.cidr: \"$cidr\": the prefix must be /16 to /28" >&2
	exit 2
fi

vpc_id=$(printf 'vpc-%08x' "$(printf '%s/%s' "$account_id" "$name" | cksum | cut -d' ' -f1)")
status=$(jq -n --arg id "$vpc_id" --arg acct "$account_id" --arg cidr "$cidr" --arg region "$region" \
	'{vpc_id: $id, account_id: $acct, cidr: $cidr, region: $region}')
dir="$state/platform/vpcs/$account_id"
mkdir -p "$dir"
printf '%s\n' "$status" >"$dir/$vpc_id.json.tmp"
mv "$dir/$vpc_id.json.tmp" "$dir/$vpc_id.json"

jq -n --argjson status "$status" '{status: $status}'
