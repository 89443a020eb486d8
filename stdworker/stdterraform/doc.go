// Package stdterraform is the stdworker provider that serves the kind
// std.terraform: each resource is a Terraform (or OpenTofu) root module,
// applied with the resource's variables, its outputs reported in status and
// destroyed when the resource is deleted.
//
// A reconcile fetches the module from spec.source into a fresh directory
// (terraform init -from-module: a local directory, a git URL or an https
// archive), points it at the resource's state in the configured backend,
// selects spec.workspace, applies with spec.variables and reports the
// outputs, sensitive ones redacted. Teardown runs destroy the same way and
// leaves an empty state behind. Runs for one resource never overlap; runs for
// different resources do, up to the kind's parallelism.
//
// Settings (stdworker's configuration file) and the kind's provider config
// (live, per resource) take the same fields; the config wins per field:
//
//	binary: terraform            # or tofu, or a path
//	backend: {type: local}       # or {type: pg, conn_str: postgres://..., schema_prefix: tf_}
//	env: {AWS_REGION: eu-west-1} # extra environment for terraform
//
// See docs/stdworker-terraform.md.
package stdterraform
