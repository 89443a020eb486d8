#!/usr/bin/env bash
# storage.objectstore's reconcile, as a stdio program (docs/stdworker.md):
# one program, two implementations, chosen by the provider config's cloud.
# Each follows its cloud's naming rules and URL shape; both report the same
# status fields, which the server checks against the kind's status_schema.
# It simulates the clouds: a bucket is a JSON file under the config's
# state_dir (default $TMPDIR/converge-catalog). Needs jq.
set -euo pipefail

req=$(cat)
name=$(jq -r '.resource.name' <<<"$req")
base=${name//./-} # a resource name may hold dots; bucket names here do not
cloud=$(jq -r '.config.cloud // ""' <<<"$req")
region=$(jq -r '.config.region // ""' <<<"$req")
state=$(jq -r --arg tmp "${TMPDIR:-/tmp}" '.config.state_dir // ($tmp + "/converge-catalog")' <<<"$req")

fail() { # a terminal failure: a retry would not fix it
	echo "$*" >&2
	exit 2
}

# Deleting the resource deletes the bucket its status names (none if it
# never synced), on the cloud that made it; the finalizer is cleared when
# this exits 0.
if [[ $(jq -r '.reaction.trigger' <<<"$req") == deleteRequested ]]; then
	file=$(jq -r '.status | if .cloud and .bucket then "\(.cloud)/\(.bucket).json" else "" end' <<<"$req")
	[[ -z "$file" ]] || rm -f "$state/storage/$file"
	exit 0
fi

case "$cloud" in
aws)
	# S3: bucket names are global, so they carry the account; at most 63
	# characters; the objects are read at the bucket's virtual host.
	account=$(jq -r '.config.account_id // ""' <<<"$req")
	[[ -n "$account" ]] || fail "config.account_id: the aws implementation needs the account the buckets belong to"
	bucket="$base-$account-$region"
	[[ "$bucket" != xn--* ]] || fail "resource name \"$name\": S3 bucket names may not start with xn--"
	url="https://$bucket.s3.$region.amazonaws.com"
	;;
gcp)
	# Cloud Storage: bucket names carry the project, may not mention
	# google; the objects are read under storage.googleapis.com.
	project=$(jq -r '.config.project // ""' <<<"$req")
	[[ -n "$project" ]] || fail "config.project: the gcp implementation needs the project the buckets belong to"
	bucket="$project-$base"
	[[ "$bucket" != *google* && "$bucket" != goog* ]] || fail "resource name \"$name\": Cloud Storage bucket names may not contain \"google\""
	url="https://storage.googleapis.com/$bucket"
	;;
"")
	fail "config.cloud: no provider config says which cloud; name one in the resource's provider_config (aws or gcp)"
	;;
*)
	fail "config.cloud: \"$cloud\" is not a cloud this program implements (aws, gcp)"
	;;
esac
((${#bucket} <= 63)) || fail "bucket name \"$bucket\" is ${#bucket} characters; $cloud allows 63: shorten the resource name"

status=$(jq --arg cloud "$cloud" --arg bucket "$bucket" --arg url "$url" --arg region "$region" \
	'{cloud: $cloud, bucket: $bucket, url: $url, region: $region,
	  versioning: (.spec.versioning // false), public: (.spec.public // false), expire_days: (.spec.expire_days // 0)}' <<<"$req")
dir="$state/storage/$cloud"
mkdir -p "$dir"
printf '%s\n' "$status" >"$dir/$bucket.json.tmp"
mv "$dir/$bucket.json.tmp" "$dir/$bucket.json"

jq -n --argjson status "$status" '{status: $status}'
