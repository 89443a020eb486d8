package app_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// changingTables are written by the server's own loops whether or not
// anyone calls it (heartbeats, feed cursors), so they are left out of the
// digest that shows a dry run changed nothing.
var changingTables = []string{"members", "feed_cursors", "goose_db_version"}

// digest fingerprints every other table of the database, row by row.
func digest(t *testing.T, pool *pgxpool.Pool) map[string]string {
	t.Helper()
	ctx := context.Background()
	rows, err := pool.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(changingTables, name) {
			tables = append(tables, name)
		}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	out := map[string]string{}
	for _, name := range tables {
		var sum string
		if err := pool.QueryRow(ctx, `SELECT coalesce(md5(string_agg(x::text, '|' ORDER BY x::text)), '') FROM `+name+` x`).Scan(&sum); err != nil {
			t.Fatal(err)
		}
		out[name] = sum
	}
	return out
}

func sameDigest(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for name, sum := range before {
		if after[name] != sum {
			t.Errorf("%s changed table %s", what, name)
		}
	}
}

// TestDryRunChangesNothingAndAnswersAsTheCall runs every write with
// dry_run, shows the database unchanged after each, and then makes the
// real call and shows it answers what the dry run said.
func TestDryRunChangesNothingAndAnswersAsTheCall(t *testing.T) {
	db := pgtest.New(t)
	a := startWith(t, func(c *app.Config) { c.DatabaseURL = db.URL })
	ctl := convergev1connect.NewControlServiceClient(http.DefaultClient, "http://"+a.Addr().String())
	pool, err := pgxpool.New(context.Background(), db.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ctx := context.Background()
	applyGreeting(t, ctl)
	applyResource(t, ctl, "a", map[string]any{"name": "ann"})
	applyResource(t, ctl, "b", map[string]any{"name": "bob"})

	// Each write, as a dry run and then for real. dry sets dry_run on a
	// copy of the request; compare checks the two answers agree.
	type write struct {
		name string
		call func(req proto.Message) (proto.Message, error)
		req  proto.Message
	}
	greeting := func(name string, spec map[string]any) *convergev1.ApplyResourceRequest {
		return &convergev1.ApplyResourceRequest{Kind: "greeting", KindVersion: 1, Name: name, Spec: mustStruct(t, spec)}
	}
	kindV2 := &convergev1.KindManifest{Kind: "greeting", KindVersion: 2,
		SpecSchema:   mustStruct(t, map[string]any{"type": "object"}),
		StatusSchema: mustStruct(t, map[string]any{"type": "object"}),
		Reactions:    []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}}}
	writes := []write{
		{"apply a new kind version", func(r proto.Message) (proto.Message, error) {
			return ctl.ApplyKind(ctx, r.(*convergev1.ApplyKindRequest))
		}, &convergev1.ApplyKindRequest{Manifest: kindV2}},
		{"update a policy", func(r proto.Message) (proto.Message, error) {
			return ctl.UpdateKindPolicy(ctx, r.(*convergev1.UpdateKindPolicyRequest))
		}, &convergev1.UpdateKindPolicyRequest{Kind: "greeting", KindVersion: 1, Policy: &convergev1.KindPolicy{MaxInflight: 7},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"max_inflight"}}}},
		{"create a resource", func(r proto.Message) (proto.Message, error) {
			return ctl.ApplyResource(ctx, r.(*convergev1.ApplyResourceRequest))
		}, greeting("c", map[string]any{"name": "cy"})},
		{"change a spec", func(r proto.Message) (proto.Message, error) {
			return ctl.ApplyResource(ctx, r.(*convergev1.ApplyResourceRequest))
		}, greeting("a", map[string]any{"name": "anna"})},
		{"apply a batch", func(r proto.Message) (proto.Message, error) {
			return ctl.ApplyResources(ctx, r.(*convergev1.ApplyResourcesRequest))
		}, &convergev1.ApplyResourcesRequest{Resources: []*convergev1.ApplyResourceRequest{
			greeting("b", map[string]any{"name": "bob"}), greeting("d", map[string]any{"name": "di"})}}},
		{"quarantine", func(r proto.Message) (proto.Message, error) {
			return ctl.QuarantineResource(ctx, r.(*convergev1.QuarantineResourceRequest))
		}, &convergev1.QuarantineResourceRequest{Kind: "greeting", Name: "b", Reason: "looking into it"}},
		{"unquarantine", func(r proto.Message) (proto.Message, error) {
			return ctl.UnquarantineResource(ctx, r.(*convergev1.UnquarantineResourceRequest))
		}, &convergev1.UnquarantineResourceRequest{Kind: "greeting", Name: "b"}},
		{"roll back", func(r proto.Message) (proto.Message, error) {
			return ctl.RollbackResource(ctx, r.(*convergev1.RollbackResourceRequest))
		}, &convergev1.RollbackResourceRequest{Kind: "greeting", Name: "a", Generation: 1}},
		{"delete", func(r proto.Message) (proto.Message, error) {
			return ctl.DeleteResource(ctx, r.(*convergev1.DeleteResourceRequest))
		}, &convergev1.DeleteResourceRequest{Kind: "greeting", Name: "d"}},
		{"delete a kind version", func(r proto.Message) (proto.Message, error) {
			return ctl.DeleteKind(ctx, r.(*convergev1.DeleteKindRequest))
		}, &convergev1.DeleteKindRequest{Kind: "greeting", KindVersion: 2}},
	}
	for _, w := range writes {
		dry := proto.CloneOf(w.req)
		f := dry.ProtoReflect().Descriptor().Fields().ByName("dry_run")
		dry.ProtoReflect().Set(f, protoreflect.ValueOfBool(true))
		before := digest(t, pool)
		dres, derr := w.call(dry)
		sameDigest(t, "dry run of "+w.name, before, digest(t, pool))
		res, err := w.call(w.req)
		if (derr == nil) != (err == nil) || (err != nil && code(derr) != code(err)) {
			t.Fatalf("%s: dry run answered %v, the call %v", w.name, derr, err)
		}
		if err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		report := reportOf(dres)
		if report == nil {
			t.Fatalf("%s: the dry run's answer has no report: %v", w.name, dres)
		}
		clearReport(dres)
		if want, got := comparable(res), comparable(dres); !proto.Equal(want, got) {
			t.Errorf("%s: the dry run answered\n  %v\nthe call\n  %v", w.name, got, want)
		}
		t.Logf("%s: %v", w.name, report)
		checkReport(t, w.name, report)
	}

	// A refused dry run is refused as the call is, and changes nothing.
	before := digest(t, pool)
	_, err = ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "greeting", KindVersion: 1, Name: "e",
		Spec: mustStruct(t, map[string]any{"name": ""}), DryRun: true})
	if code(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "/name") {
		t.Fatalf("invalid spec, dry run: %v", err)
	}
	_, err = ctl.ApplyResources(ctx, &convergev1.ApplyResourcesRequest{Resources: []*convergev1.ApplyResourceRequest{
		{Kind: "greeting", KindVersion: 1, Name: "e", Spec: mustStruct(t, map[string]any{"name": "e"}), DryRun: true}}})
	if code(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "resources[0].dry_run") {
		t.Fatalf("dry_run on a batch item: %v", err)
	}
	sameDigest(t, "refused dry runs", before, digest(t, pool))
}

// checkReport checks what each write's report must say.
func checkReport(t *testing.T, name string, r *convergev1.DryRunReport) {
	t.Helper()
	change := func(i int) *convergev1.PlannedResourceChange {
		if i >= len(r.GetResources()) {
			t.Fatalf("%s: report has %d resources: %v", name, len(r.GetResources()), r)
		}
		return r.GetResources()[i]
	}
	switch name {
	case "create a resource":
		c := change(0)
		if c.GetBefore() != nil || c.GetAfter().GetGeneration() != 1 || !c.GetGenerationBumps() ||
			c.GetAfter().GetSpec().GetFields()["name"].GetStringValue() != "cy" {
			t.Errorf("%s: %v", name, c)
		}
	case "change a spec":
		c := change(0)
		if c.GetBefore().GetSpec().GetFields()["name"].GetStringValue() != "ann" ||
			c.GetAfter().GetSpec().GetFields()["name"].GetStringValue() != "anna" || !c.GetGenerationBumps() ||
			c.GetAfter().GetGeneration() != c.GetBefore().GetGeneration()+1 {
			t.Errorf("%s: %v", name, c)
		}
	case "apply a batch":
		if b, d := change(0), change(1); b.GetGenerationBumps() || !d.GetGenerationBumps() || d.GetBefore() != nil {
			t.Errorf("%s: %v", name, r)
		}
	case "quarantine":
		if c := change(0); c.GetBefore().GetQuarantined() || !c.GetAfter().GetQuarantined() {
			t.Errorf("%s: %v", name, c)
		}
	case "delete":
		// greeting has no teardown reaction: the resource goes at once.
		c := change(0)
		if c.GetBefore() == nil || c.GetAfter() != nil || len(r.GetTeardown()) != 1 ||
			r.GetTeardown()[0].GetResource().GetName() != "d" || r.GetTeardown()[0].GetAction() != "remove" {
			t.Errorf("%s: %v", name, r)
		}
	}
}

func reportOf(m proto.Message) *convergev1.DryRunReport {
	f := m.ProtoReflect().Descriptor().Fields().ByName("dry_run")
	if f == nil || !m.ProtoReflect().Has(f) {
		return nil
	}
	return m.ProtoReflect().Get(f).Message().Interface().(*convergev1.DryRunReport)
}

func clearReport(m proto.Message) {
	m.ProtoReflect().Clear(m.ProtoReflect().Descriptor().Fields().ByName("dry_run"))
}

// comparable drops what differs between two calls that did the same
// thing: times, and the identifiers a rolled-back insert used up.
func comparable(m proto.Message) proto.Message {
	m = proto.CloneOf(m)
	var strip func(protoreflect.Message)
	strip = func(pm protoreflect.Message) {
		pm.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.Message() != nil && fd.Message().FullName() == "google.protobuf.Timestamp":
				pm.Clear(fd)
			case fd.Name() == "uid" || fd.Name() == "resource_version" || fd.Name() == "revision":
				pm.Clear(fd)
			case fd.IsList() && fd.Message() != nil:
				for i := 0; i < v.List().Len(); i++ {
					strip(v.List().Get(i).Message())
				}
			case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
				strip(v.Message())
			}
			return true
		})
	}
	strip(m.ProtoReflect())
	return m
}
