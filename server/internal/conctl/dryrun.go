package conctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/unidiff"
)

const dryRunUsage = "send every write as a dry run: the server answers what it would do, and stores nothing"

// dryRunFlag gives a writing command --dry-run. The flag is served in one
// place, dryRunInterceptor: every request the command sends that can be a
// dry run is sent as one, and each answer's report is printed.
func (a *app) dryRunFlag(cmd *cobra.Command, persistent bool) {
	f := cmd.Flags()
	if persistent {
		f = cmd.PersistentFlags()
	}
	f.BoolVar(&a.dryRun, "dry-run", false, dryRunUsage)
}

// checkDryRun refuses --wait with --dry-run: a dry run leaves nothing to
// wait for.
func (a *app) checkDryRun(cmd *cobra.Command) error {
	if w := cmd.Flags().Lookup("wait"); a.dryRun && w != nil && w.Changed {
		return usagef("--wait: nothing to wait for with --dry-run")
	}
	return nil
}

// dryRunMark ends a command's result line under --dry-run.
func (a *app) dryRunMark() string {
	if a.dryRun {
		return " (dry run)"
	}
	return ""
}

type dryRunInterceptor struct{ a *app }

func (d dryRunInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if !d.a.dryRun {
			return next(ctx, req)
		}
		if m, ok := req.Any().(proto.Message); ok {
			if f := m.ProtoReflect().Descriptor().Fields().ByName("dry_run"); f != nil && f.Kind() == protoreflect.BoolKind {
				m.ProtoReflect().Set(f, protoreflect.ValueOfBool(true))
			}
		}
		res, err := next(ctx, req)
		if err != nil {
			return res, err
		}
		if m, ok := res.Any().(proto.Message); ok {
			if f := m.ProtoReflect().Descriptor().Fields().ByName("dry_run"); f != nil && m.ProtoReflect().Has(f) {
				w := d.a.stdout
				if d.a.output != formatTable {
					w = d.a.stderr // stdout stays one document for -o json and yaml
				}
				r, _ := m.ProtoReflect().Get(f).Message().Interface().(*convergev1.DryRunReport)
				printDryRun(w, r)
			}
		}
		return res, nil
	}
}

func (d dryRunInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (d dryRunInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// printDryRun prints what a dry run says a write would do to the
// resources it names, with spec diffs, and the teardown of a delete.
func printDryRun(w io.Writer, r *convergev1.DryRunReport) {
	for _, c := range r.GetResources() {
		ref := c.GetResource()
		id := ref.GetNamespace() + "/" + ref.GetKind() + "/" + ref.GetName()
		b, af := c.GetBefore(), c.GetAfter()
		switch {
		case b == nil && af == nil:
			fmt.Fprintf(w, "  (dry run) %s: does not exist\n", id)
			continue
		case b == nil:
			fmt.Fprintf(w, "  (dry run) + %s: created at v%d, generation %d\n", id, af.GetKindVersion(), af.GetGeneration())
		case af == nil:
			fmt.Fprintf(w, "  (dry run) - %s: removed at once\n", id)
			continue
		default:
			fmt.Fprintf(w, "  (dry run) ~ %s: %s\n", id, stateChange(b, af, c.GetGenerationBumps()))
		}
		if diff := specDiff(id, b, af); diff != "" {
			for _, line := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
				fmt.Fprintf(w, "      %s\n", line)
			}
		}
	}
	if steps := r.GetTeardown(); len(steps) > 0 {
		fmt.Fprintf(w, "  (dry run) teardown, %d resource(s), in order:\n", len(steps))
		for _, st := range steps {
			ref := st.GetResource()
			fmt.Fprintf(w, "      wave %d  %s/%s/%s  %s\n", st.GetWave(), ref.GetNamespace(), ref.GetKind(), ref.GetName(), teardownWords[st.GetAction()])
		}
	}
}

var teardownWords = map[string]string{
	"reaction": "its teardown reaction runs",
	"remove":   "removed (no teardown reaction)",
	"retain":   "forgotten without teardown (deletion policy retain)",
	"frozen":   "quarantined: waits until unquarantined",
}

// stateChange says in words what changes between two states of a
// resource.
func stateChange(b, a *convergev1.ResourceState, bumps bool) string {
	var parts []string
	if bumps {
		parts = append(parts, fmt.Sprintf("generation %d -> %d", b.GetGeneration(), a.GetGeneration()))
	}
	if b.GetKindVersion() != a.GetKindVersion() {
		parts = append(parts, fmt.Sprintf("v%d -> v%d", b.GetKindVersion(), a.GetKindVersion()))
	}
	if b.GetPhase() != a.GetPhase() {
		parts = append(parts, fmt.Sprintf("phase %s -> %s", b.GetPhase(), a.GetPhase()))
	}
	if !maps.Equal(b.GetLabels(), a.GetLabels()) {
		parts = append(parts, "labels "+labelText(b.GetLabels())+" -> "+labelText(a.GetLabels()))
	}
	if b.GetProviderConfig() != a.GetProviderConfig() {
		parts = append(parts, fmt.Sprintf("provider config %q -> %q", b.GetProviderConfig(), a.GetProviderConfig()))
	}
	if b.GetDeletionPolicy() != a.GetDeletionPolicy() {
		parts = append(parts, fmt.Sprintf("deletion policy %q -> %q", b.GetDeletionPolicy(), a.GetDeletionPolicy()))
	}
	if len(parts) == 0 {
		return "unchanged"
	}
	return strings.Join(parts, ", ")
}

func labelText(l map[string]string) string {
	keys := slices.Sorted(maps.Keys(l))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// specDiff is the unified diff of two states' specs, as indented JSON;
// empty when they are equal. A new resource's spec is diffed against
// nothing.
func specDiff(id string, b, a *convergev1.ResourceState) string {
	from, fromName := "", "/dev/null"
	if b != nil {
		from, fromName = specJSON(b.GetSpec()), fmt.Sprintf("%s spec (generation %d)", id, b.GetGeneration())
	}
	to := specJSON(a.GetSpec())
	if from == to {
		return ""
	}
	return unidiff.Unified(fromName, fmt.Sprintf("%s spec (generation %d)", id, a.GetGeneration()), from, to, diffContext)
}

// specJSON is a spec (a Struct or decoded JSON; missing is {}) as
// indented JSON with sorted keys, for diffs.
func specJSON(v any) string {
	if s, ok := v.(*structpb.Struct); ok {
		v = s.AsMap()
	}
	out, err := json.MarshalIndent(orEmpty(v), "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(out) + "\n"
}
