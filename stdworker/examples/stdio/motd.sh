#!/usr/bin/env bash
# A stdio program in bash: the example.motd kind's reconcile.
#
# stdworker runs it once per task with a JSON request on stdin (see
# docs/stdworker.md) and reads a JSON response from stdout. Exit 0 applies
# the response, exit 2 fails the resource terminally (the message is what we
# print on stderr), any other exit is retried. Needs jq.
set -euo pipefail

req=$(cat)
message=$(jq -r '.spec.message' <<<"$req")
audience=$(jq -r '.spec.audience // "world"' <<<"$req")
generation=$(jq '.resource.generation' <<<"$req")

if [[ "$message" == *forbidden* ]]; then
	echo "spec.message: the word \"forbidden\" is not allowed" >&2
	exit 2
fi

motd="$message, $audience!"
echo "composed the message of the day for generation $generation" >&2
jq -n --arg motd "$motd" --argjson generation "$generation" \
	'{status: {motd: $motd, length: ($motd | length), generation: $generation}}'
