package main

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	// Registers the converge.v1 descriptors this page walks.
	_ "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

const protoPackage = "converge.v1"

// protoFiles returns the converge.v1 files of the generated registry, by path.
func protoFiles() []protoreflect.FileDescriptor {
	var files []protoreflect.FileDescriptor
	protoregistry.GlobalFiles.RangeFilesByPackage(protoPackage, func(f protoreflect.FileDescriptor) bool {
		files = append(files, f)
		return true
	})
	sort.Slice(files, func(i, j int) bool { return files[i].Path() < files[j].Path() })
	return files
}

// writeServices lists every RPC of every service: its Connect/gRPC
// procedure, how it streams, and its messages.
func writeServices(b *bytes.Buffer, doc *openAPI) {
	for _, f := range protoFiles() {
		for i := 0; i < f.Services().Len(); i++ {
			svc := f.Services().Get(i)
			fmt.Fprintf(b, "### %s\n\nDefined in [proto/%s](../../proto/%s); each procedure's path is `/%s/` and its name.\n\n",
				svc.FullName(), f.Path(), f.Path(), svc.FullName())
			b.WriteString("| Procedure | Streaming | Request | Response |\n|---|---|---|---|\n")
			for j := 0; j < svc.Methods().Len(); j++ {
				m := svc.Methods().Get(j)
				fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", m.Name(),
					streaming(m), messageLink(m.Input(), doc), messageLink(m.Output(), doc))
			}
			b.WriteString("\n")
		}
	}
}

// writeProtoMessages renders, from the descriptors, the messages the
// OpenAPI document does not hold: Connect requests whose fields REST takes
// from the path and query, and the worker protocol's.
func writeProtoMessages(b *bytes.Buffer, doc *openAPI) {
	for _, f := range protoFiles() {
		var msgs []protoreflect.MessageDescriptor
		collectMessages(f.Messages(), &msgs)
		for _, m := range msgs {
			if inOpenAPI(m, doc) || m.IsMapEntry() {
				continue
			}
			fmt.Fprintf(b, "### %s {#%s}\n\n", localName(m), protoAnchor(m))
			if m.Fields().Len() == 0 {
				b.WriteString("No fields.\n\n")
				continue
			}
			b.WriteString("| Field | Type | Notes |\n|---|---|---|\n")
			for i := 0; i < m.Fields().Len(); i++ {
				fd := m.Fields().Get(i)
				var notes []string
				if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
					notes = append(notes, "one of `"+string(o.Name())+"`")
				}
				if fd.HasOptionalKeyword() {
					notes = append(notes, "optional")
				}
				fmt.Fprintf(b, "| `%s` | %s | %s |\n", fd.Name(), fieldType(fd, doc), strings.Join(notes, "; "))
			}
			b.WriteString("\n")
		}
	}
}

func collectMessages(list protoreflect.MessageDescriptors, out *[]protoreflect.MessageDescriptor) {
	for i := 0; i < list.Len(); i++ {
		m := list.Get(i)
		*out = append(*out, m)
		collectMessages(m.Messages(), out)
	}
}

func streaming(m protoreflect.MethodDescriptor) string {
	switch {
	case m.IsStreamingClient() && m.IsStreamingServer():
		return "bidirectional"
	case m.IsStreamingServer():
		return "server"
	case m.IsStreamingClient():
		return "client"
	}
	return "unary"
}

func fieldType(fd protoreflect.FieldDescriptor, doc *openAPI) string {
	if fd.IsMap() {
		return "map of " + scalarOrMessage(fd.MapKey(), doc) + " to " + scalarOrMessage(fd.MapValue(), doc)
	}
	t := scalarOrMessage(fd, doc)
	if fd.IsList() {
		return "repeated " + t
	}
	return t
}

func scalarOrMessage(fd protoreflect.FieldDescriptor, doc *openAPI) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return messageLink(fd.Message(), doc)
	case protoreflect.EnumKind:
		return "enum `" + string(fd.Enum().FullName()) + "`"
	}
	return fd.Kind().String()
}

// messageLink links a message to its section: the OpenAPI schema when the
// document has it, else the descriptor-rendered one; well-known types name
// their JSON form.
func messageLink(m protoreflect.MessageDescriptor, doc *openAPI) string {
	if m.ParentFile().Package() != protoPackage {
		return "`" + string(m.FullName()) + "`"
	}
	if inOpenAPI(m, doc) {
		name := openAPIName(m)
		return fmt.Sprintf("[%s](#%s)", name, schemaAnchor(name))
	}
	return fmt.Sprintf("[%s](#%s)", localName(m), protoAnchor(m))
}

// localName is a message's name inside the package: "WorkerMessage.Subscribe".
func localName(m protoreflect.MessageDescriptor) string {
	return strings.TrimPrefix(string(m.FullName()), protoPackage+".")
}

// openAPIName is the schema name the OpenAPI generator gives a message:
// "v1" and the message's names from the outermost down, concatenated.
func openAPIName(m protoreflect.MessageDescriptor) string {
	rel := strings.TrimPrefix(string(m.FullName()), protoPackage+".")
	return "v1" + strings.ReplaceAll(rel, ".", "")
}

func inOpenAPI(m protoreflect.MessageDescriptor, doc *openAPI) bool {
	_, ok := doc.Components.Schemas[openAPIName(m)]
	return ok
}

func protoAnchor(m protoreflect.MessageDescriptor) string {
	return "proto-" + strings.ToLower(strings.ReplaceAll(string(m.FullName()), ".", "-"))
}
