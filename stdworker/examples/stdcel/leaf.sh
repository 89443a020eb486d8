#!/usr/bin/env bash
# The three leaf kinds' reconcile, as one stdio program (docs/stdworker.md):
# a JSON request on stdin, a JSON response on stdout; exit 2 is a terminal
# failure. It only simulates: nothing is created. Needs jq.
set -euo pipefail

req=$(cat)
kind=$(jq -r '.resource.kind' <<<"$req")
name=$(jq -r '.resource.name' <<<"$req")

case "$kind" in
demo.database)
	jq -n --arg host "$name.db.internal" --argjson spec "$(jq '.spec' <<<"$req")" \
		'{status: {host: $host, port: (if $spec.engine == "mysql" then 3306 else 5432 end), engine: $spec.engine, ready: true}}'
	;;
demo.cache)
	jq -n --arg ep "redis://$name.cache.internal:6379" '{status: {endpoint: $ep}}'
	;;
demo.service)
	url=$(jq -r '.spec.database_url' <<<"$req")
	if [[ -z "$url" ]]; then
		echo "spec.database_url is empty: the service cannot start without its database" >&2
		exit 2
	fi
	jq -n --arg url "https://$name.apps.internal" --arg db "$url" --argjson replicas "$(jq '.spec.replicas // 1' <<<"$req")" \
		'{status: {url: $url, replicas: $replicas, database_url: $db}}'
	;;
*)
	echo "leaf.sh does not serve kind $kind" >&2
	exit 2
	;;
esac
