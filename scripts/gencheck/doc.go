// Package gencheck tests that the committed generated code (Go, TypeScript
// and the OpenAPI document) matches what the proto files generate.
package gencheck
