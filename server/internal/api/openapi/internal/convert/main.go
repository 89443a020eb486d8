// Command convert turns the Swagger 2 document that protoc-gen-openapiv2
// writes into the OpenAPI 3 document the server serves, and adds what the
// proto cannot express: the NDJSON watch stream.
//
// Usage: go run ./server/internal/api/openapi/internal/convert IN.swagger.json OUT.json
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: convert IN.swagger.json OUT.json")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "convert:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	raw, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var v2 openapi2.T
	if err := json.Unmarshal(raw, &v2); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	v3, err := openapi2conv.ToV3(&v2)
	if err != nil {
		return err
	}
	v3.Info.Title = "Converge control API"
	v3.Info.Version = "v1"
	v3.Info.Description = "Kinds, resources, events and changes. Every operation is also served over " +
		"Connect, gRPC and gRPC-Web as converge.v1.ControlService. Field names are the proto names (snake_case)."
	addWatch(v3)
	doc, err := json.MarshalIndent(v3, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(doc, '\n'), 0o644)
}

// addWatch documents GET /api/v1/watch, which the server serves by hand
// because REST transcoding does not carry server streams.
func addWatch(doc *openapi3.T) {
	param := func(name, desc string) *openapi3.ParameterRef {
		return &openapi3.ParameterRef{Value: openapi3.NewQueryParameter(name).
			WithDescription(desc).WithSchema(openapi3.NewStringSchema())}
	}
	resp := openapi3.NewResponse().WithDescription(
		"A stream of WatchResponse objects as newline-delimited JSON. The first line is a heartbeat " +
			"sent once the stream is positioned; every later change is delivered.")
	resp.Content = openapi3.Content{"application/x-ndjson": &openapi3.MediaType{
		Schema: &openapi3.SchemaRef{Ref: "#/components/schemas/v1WatchResponse"},
	}}
	op := &openapi3.Operation{
		OperationID: "ControlService_WatchNDJSON",
		Summary:     "Stream resource changes as newline-delimited JSON.",
		Tags:        []string{"ControlService"},
		Parameters: openapi3.Parameters{
			param("namespace", "Only this namespace (empty: all)."),
			param("kind", "Only this kind."),
			param("name", "Only this resource (needs kind)."),
			param("cursor", "Resume after this point (from a Change or ListResourcesResponse.watch_cursor). Empty: from now."),
		},
		Responses: openapi3.NewResponses(openapi3.WithStatus(200, &openapi3.ResponseRef{Value: resp})),
	}
	doc.AddOperation("/api/v1/watch", "GET", op)
}
