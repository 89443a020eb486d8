// Package compat is the schema-stability checker: it compares what
// an old JSON Schema accepted with what a new one accepts and lists every
// breaking change, each with the instance path where it bites, the place
// in the new schema, a reason and a human-readable detail.
//
// The server runs it when a manifest re-applies an existing (kind,
// kind_version) and refuses the manifest if anything is reported;
// "conctl catalog check" runs it offline against git history. It is a
// pure package: documents in, changes out, no I/O.
//
// # How it decides
//
// The checker proves, place by place, that every value the old schema
// accepts is accepted by the new one. "$ref" and "allOf" are flattened
// into conjunctions; the old side's anyOf, oneOf and if/then/else are
// split into cases, each compared on its own; every keyword of the new
// schema must then be implied by the old case: the same or a weaker
// bound, a superset of types and enum values, the same pattern and
// format, the same or fewer required names, a compatible item and
// property schema (recursively). Where keywords interact in ways it does
// not model (a changed anyOf with no branch matching, a oneOf whose
// branches cannot be shown exclusive, a new "not", unevaluated* beside
// in-place applicators, dynamic references), it reports Unproven rather
// than guess.
//
// It is sound: it may report a change that is in fact compatible, never
// miss one that breaks a value the old schema accepted, with one
// deliberate exception that makes adding optional properties possible: a
// property name the old schema never mentioned (open object, no matching
// patternProperties) is taken as unused, so declaring it is additive even
// though an old instance could in principle have carried that name with
// another value. Closing or narrowing the rest of an open object
// (additionalProperties, patternProperties, propertyNames) is breaking.
//
// docs/stability.md describes the gate for users.
package compat
