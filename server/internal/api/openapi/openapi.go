// Package openapi serves the OpenAPI document of the REST API. The
// document is generated from the proto files (see scripts/gen) and
// embedded, so it always matches the API the binary serves.
package openapi

import (
	_ "embed"
	"net/http"
)

// Document is the OpenAPI 3 document, as JSON.
//
//go:embed openapi.json
var Document []byte

// Handler serves Document.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(Document)
	})
}
