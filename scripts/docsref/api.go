package main

import (
	"bytes"
	"fmt"
)

// apiPage renders the API reference: REST from the OpenAPI document, the
// Connect procedures of both services, and every message.
func apiPage(openapiFile string) ([]byte, error) {
	doc, err := readOpenAPI(openapiFile)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(generatedNote)
	b.WriteString("# API reference\n\n")
	fmt.Fprintf(&b, "%s\n\n", prose(doc.Info.Description))
	b.WriteString("This page is generated from the OpenAPI document the server serves at `/openapi.json` " +
		"([server/internal/api/openapi/openapi.json](../../" + openAPIPath + ")), itself generated from the protos, " +
		"and from the proto descriptors compiled into the Go SDK. [The control API](../api.md) explains how to call it: " +
		"[authentication](../api.md#authentication), [errors](../api.md#errors), [listing and paging](../api.md#listing) " +
		"and [Watch](../api.md#watch).\n\n")
	b.WriteString("## Connect and gRPC procedures\n\n")
	b.WriteString("Every procedure is served over Connect (HTTP POST of JSON or binary protobuf to the procedure path), " +
		"gRPC and gRPC-Web on the server's listener. Workers use `WorkerService`; people and tools use `ControlService`.\n\n")
	writeServices(&b, doc)
	b.WriteString("## REST endpoints\n\n")
	b.WriteString("The `ControlService` RPCs as REST+JSON under `/api/v1`; field names are the proto names (snake_case), " +
		"64-bit integers are JSON strings, timestamps RFC 3339.\n\n")
	writeREST(&b, doc)
	b.WriteString("## Messages\n\n")
	b.WriteString("The schemas of the OpenAPI document, by name.\n\n")
	writeSchemas(&b, doc)
	b.WriteString("## Connect-only messages\n\n")
	b.WriteString("Messages the OpenAPI document does not hold, from the proto descriptors: the requests whose fields " +
		"REST takes from the path and the query, and the messages of the worker stream " +
		"([Writing workers](../workers.md) explains the protocol).\n\n")
	writeProtoMessages(&b, doc)
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// indexPage introduces the generated pages.
func indexPage() []byte {
	return []byte(generatedNote + `# Reference

Generated from the code by ` + "`scripts/docsref`" + `, and checked against it by a test, so these pages
say what the binaries and the server do today.

| Page | What |
|---|---|
| [conctl](conctl.md) | Every ` + "`conctl`" + ` command, its flags and examples |
| [converge](converge.md) | The server binary: ` + "`serve`, `dev`, `migrate`" + ` |
| [stdworker](stdworker.md) | The generic worker's commands and flags |
| [API](api.md) | Every Connect/gRPC procedure, REST endpoint and message |
`)
}
