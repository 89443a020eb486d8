#!/usr/bin/env bash
# apps.dnsrecord's reconcile, as a stdio program (docs/stdworker.md). It
# only simulates: it checks the record and reports it. A record without a
# target, or an A record whose target is not an IPv4 address, fails
# terminally (exit 2). Needs jq.
set -euo pipefail

req=$(cat)
type=$(jq -r '.spec.type // "CNAME"' <<<"$req")
target=$(jq -r '.spec.target // ""' <<<"$req")
if [[ -z "$target" ]]; then
	echo "spec.target: empty; a record must point somewhere (in apps.webapp it flows in from the service)" >&2
	exit 2
fi
if [[ "$type" == A && ! "$target" =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}$ ]]; then
	echo "spec.target: \"$target\" is not an IPv4 address, which an A record needs (use CNAME for a host name)" >&2
	exit 2
fi
jq --arg type "$type" '{status: {fqdn: "\(.spec.name).\(.spec.zone)", type: $type, target: .spec.target, ttl: (.spec.ttl // 300)}}' <<<"$req"
