// Package manifest checks kind manifests against the legality rules of a
// kind (reaction roles, finalizers, operations, schemas) and compiles them
// into the Kind the server caches.
//
// It runs after protovalidate has checked field formats (names, lengths,
// trigger and emit vocabularies), so it checks only how the fields fit
// together. Every problem is reported, each with the field it concerns and
// the ID of the rule it breaks; docs/kinds.md lists the rules.
package manifest
