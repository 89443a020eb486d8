#!/usr/bin/env bash
# apps.database's reconcile, as a stdio program (docs/stdworker.md): one JSON
# request on stdin, one JSON response on stdout, exit 2 for a terminal
# failure. It only simulates: the database's address is derived from its
# name. Needs jq.
set -euo pipefail

req=$(cat)
jq '.resource.name as $name
	| (.spec.engine // "postgres") as $engine
	| (if $engine == "mysql" then 3306 else 5432 end) as $port
	| ($name + ".db.apps.internal") as $host
	| {status: {host: $host, port: $port, engine: $engine, size_gb: (.spec.size_gb // 10), ready: true,
		url: "\($engine)://\($host):\($port)/\($name | gsub("[^a-z0-9]"; "_"))"}}' <<<"$req"
