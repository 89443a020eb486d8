#!/usr/bin/env bash
# platform.route's reconcile, as a stdio program (docs/stdworker.md). It
# simulates the cloud: the route table is a JSON file under the provider
# config's state_dir (default $TMPDIR/converge-catalog), its id and its
# gateway's id derived from the network and the route's name. Needs jq.
set -euo pipefail

req=$(cat)
name=$(jq -r '.resource.name' <<<"$req")
vpc_id=$(jq -r '.spec.vpc_id // ""' <<<"$req")
vpc_cidr=$(jq -r '.spec.vpc_cidr // ""' <<<"$req")
destination=$(jq -r '.spec.destination // "0.0.0.0/0"' <<<"$req")
target=$(jq -r '.spec.target // "internet-gateway"' <<<"$req")
state=$(jq -r --arg tmp "${TMPDIR:-/tmp}" '.config.state_dir // ($tmp + "/converge-catalog")' <<<"$req")

# Deleting the resource deletes the route table its status names (none if
# it never synced); the finalizer is cleared when this exits 0.
if [[ $(jq -r '.reaction.trigger' <<<"$req") == deleteRequested ]]; then
	file=$(jq -r '.status | if .vpc_id and .route_table_id then "\(.vpc_id)/\(.route_table_id).json" else "" end' <<<"$req")
	[[ -z "$file" ]] || rm -f "$state/platform/routes/$file"
	exit 0
fi

if [[ -z "$vpc_id" || -z "$vpc_cidr" ]]; then
	echo "spec.vpc_id, spec.vpc_cidr: both are needed; in a landing zone they flow in from the network" >&2
	exit 2
fi
if [[ "$destination" == "$vpc_cidr" ]]; then
	echo "spec.destination: $destination is the network's own block, which the local route already covers" >&2
	exit 2
fi

hash=$(printf '%s/%s' "$vpc_id" "$name" | cksum | cut -d' ' -f1)
table=$(printf 'rtb-%08x' "$hash")
case "$target" in
internet-gateway) gateway=$(printf 'igw-%08x' "$hash") ;;
nat-gateway) gateway=$(printf 'nat-%08x' "$hash") ;;
transit-gateway) gateway=$(printf 'tgw-%08x' "$hash") ;;
*)
	echo "spec.target: \"$target\" is not a gateway kind" >&2
	exit 2
	;;
esac

status=$(jq -n --arg table "$table" --arg vpc "$vpc_id" --arg local "$vpc_cidr" --arg dest "$destination" --arg gw "$gateway" \
	'{route_table_id: $table, vpc_id: $vpc, routes: [{destination: $local, target: "local"}, {destination: $dest, target: $gw}]}')
dir="$state/platform/routes/$vpc_id"
mkdir -p "$dir"
printf '%s\n' "$status" >"$dir/$table.json.tmp"
mv "$dir/$table.json.tmp" "$dir/$table.json"

jq -n --argjson status "$status" '{status: $status}'
