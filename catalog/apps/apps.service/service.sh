#!/usr/bin/env bash
# apps.service's reconcile, as a stdio program (docs/stdworker.md). It only
# simulates: the service's address is derived from its name. A service
# given a database_url that is not a URL fails terminally (exit 2): a
# retry would not fix it. Needs jq.
set -euo pipefail

req=$(cat)
db_url=$(jq -r '.spec.database_url // ""' <<<"$req")
db_host=""
if [[ -n "$db_url" ]]; then
	if [[ ! "$db_url" =~ ^[a-z]+://([^/:@]+)(:[0-9]+)?(/.*)?$ ]]; then
		echo "spec.database_url: \"$db_url\" is not engine://host[:port]/database" >&2
		exit 2
	fi
	db_host=${BASH_REMATCH[1]}
fi
jq --arg db "$db_host" '.resource.name as $name
	| ($name + ".lb.apps.internal") as $address
	| {status: ({address: $address, url: "http://\($address):\(.spec.port // 8080)",
		replicas: (.spec.replicas // 2), image: .spec.image}
		+ (if $db == "" then {} else {database: $db} end))}' <<<"$req"
