package api_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
)

// lcHarness is the control service over HTTP on a fresh database whose
// sessions keep a given number of revisions, with the store and bus
// underneath.
type lcHarness struct {
	ctl   convergev1connect.ControlServiceClient
	store *store.Store
	bus   *notify.Bus
}

// newLCHarness starts the service; keep 0 leaves history_keep unset.
func newLCHarness(t *testing.T, keep int) *lcHarness {
	t.Helper()
	db := pgtest.New(t)
	pool := db.Pool
	if keep > 0 {
		pc, err := pgxpool.ParseConfig(db.URL)
		if err != nil {
			t.Fatal(err)
		}
		pc.ConnConfig.RuntimeParams[store.HistoryKeepSetting] = strconv.Itoa(keep)
		if pool, err = pgxpool.NewWithConfig(context.Background(), pc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
	}
	ctl, st, bus := serveAPI(t, pool)
	return &lcHarness{ctl: ctl, store: st, bus: bus}
}

// kind applies a manifest written as JSON.
func (h *lcHarness) kind(t *testing.T, manifest string) {
	t.Helper()
	m := &convergev1.KindManifest{}
	if err := protojson.Unmarshal([]byte(manifest), m); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ctl.ApplyKind(context.Background(), &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
		t.Fatal(err)
	}
}

func lcStruct(t *testing.T, js string) *structpb.Struct {
	t.Helper()
	s := &structpb.Struct{}
	if err := protojson.Unmarshal([]byte(js), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func lcJSON(t *testing.T, s *structpb.Struct) string {
	t.Helper()
	b, err := protojson.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), " ", "")
}

// lcRefused checks an error's code and that its message names each part.
func lcRefused(t *testing.T, what string, err error, code connect.Code, parts ...string) {
	t.Helper()
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != code {
		t.Fatalf("%s: err = %v, want %v", what, err, code)
	}
	for _, p := range parts {
		if !strings.Contains(ce.Message(), p) {
			t.Fatalf("%s: message %q does not mention %q", what, ce.Message(), p)
		}
	}
}

// bucketKind has a config_schema: a required region, an optional integer
// size that needs a tier.
const bucketKind = `{
  "kind": "bucket", "kind_version": 1,
  "spec_schema": {"type": "object"},
  "config_schema": {"type": "object", "required": ["region"],
    "properties": {"region": {"type": "string"}, "size": {"type": "integer"}, "tier": {"type": "string"},
      "zones": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}},
    "dependentRequired": {"size": ["tier"]}},
  "reactions": [{"name": "reconcile", "trigger": "specChange", "emits": ["status"]}]
}`

// plainKind has no config_schema.
const plainKind = `{
  "kind": "plain", "kind_version": 1,
  "spec_schema": {"type": "object"},
  "reactions": [{"name": "reconcile", "trigger": "specChange", "emits": ["status"]}]
}`

func (h *lcHarness) applyConfig(kind, name, config string) (*convergev1.ApplyProviderConfigResponse, error) {
	c := &structpb.Struct{}
	if err := protojson.Unmarshal([]byte(config), c); err != nil {
		return nil, err
	}
	return h.ctl.ApplyProviderConfig(context.Background(), &convergev1.ApplyProviderConfigRequest{
		Config: &convergev1.ProviderConfig{Kind: kind, KindVersion: 1, Name: name, Config: c}})
}

func (h *lcHarness) mustConfig(t *testing.T, kind, name, config, wantResult string) *convergev1.ProviderConfig {
	t.Helper()
	res, err := h.applyConfig(kind, name, config)
	if err != nil {
		t.Fatalf("apply config %s/%s %s: %v", kind, name, config, err)
	}
	if res.GetResult() != wantResult {
		t.Fatalf("apply config %s/%s %s: result %s, want %s", kind, name, config, res.GetResult(), wantResult)
	}
	return res.GetConfig()
}

// woken reports whether ch received a wake.
func woken(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestProviderConfigCRUD(t *testing.T) {
	h := newLCHarness(t, 0)
	ctx := context.Background()
	h.kind(t, bucketKind)
	h.kind(t, plainKind)
	kindsWake, stop := h.bus.Subscribe(notify.Kinds)
	defer stop()

	c := h.mustConfig(t, "bucket", "default", `{"region":"eu","tier":"std"}`, "created")
	if c.GetRevision() != 1 || c.GetCreatedAt() == nil || lcJSON(t, c.GetConfig()) != `{"region":"eu","tier":"std"}` {
		t.Fatalf("created = %v", c)
	}
	if !woken(kindsWake) {
		t.Fatal("no kinds wake after a config change")
	}
	h.mustConfig(t, "bucket", "default", `{"region":"eu","tier":"std"}`, "unchanged")
	if woken(kindsWake) {
		t.Fatal("a kinds wake after an unchanged config")
	}
	if c = h.mustConfig(t, "bucket", "default", `{"region":"us","tier":"std"}`, "configured"); c.GetRevision() != 2 {
		t.Fatalf("configured = %v", c)
	}
	h.mustConfig(t, "bucket", "big", `{"size":9}`, "created")
	// A kind with no config_schema takes any object.
	h.mustConfig(t, "plain", "default", `{"anything":{"goes":[1,2]}}`, "created")

	got, err := h.ctl.GetProviderConfig(ctx, &convergev1.GetProviderConfigRequest{Kind: "bucket", KindVersion: 1, Name: "big"})
	if err != nil || lcJSON(t, got.GetConfig().GetConfig()) != `{"size":9}` {
		t.Fatalf("get = %v, %v", got, err)
	}
	_, err = h.ctl.GetProviderConfig(ctx, &convergev1.GetProviderConfigRequest{Kind: "bucket", KindVersion: 1, Name: "nope"})
	lcRefused(t, "get missing", err, connect.CodeNotFound, `provider config "nope" of kind bucket v1 not found`)

	list := func(kind string, version int32) string {
		res, err := h.ctl.ListProviderConfigs(ctx, &convergev1.ListProviderConfigsRequest{Kind: kind, KindVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range res.GetConfigs() {
			out = append(out, c.GetKind()+"/"+c.GetName())
		}
		return strings.Join(out, ",")
	}
	if got := list("", 0); got != "bucket/big,bucket/default,plain/default" {
		t.Fatalf("list = %s", got)
	}
	if got := list("plain", 1); got != "plain/default" {
		t.Fatalf("list plain = %s", got)
	}
	_, err = h.ctl.ListProviderConfigs(ctx, &convergev1.ListProviderConfigsRequest{KindVersion: 1})
	lcRefused(t, "list by version alone", err, connect.CodeInvalidArgument, "kind_version")

	woken(kindsWake)
	if _, err := h.ctl.DeleteProviderConfig(ctx, &convergev1.DeleteProviderConfigRequest{Kind: "bucket", KindVersion: 1, Name: "big"}); err != nil {
		t.Fatal(err)
	}
	if !woken(kindsWake) {
		t.Fatal("no kinds wake after a delete")
	}
	_, err = h.ctl.DeleteProviderConfig(ctx, &convergev1.DeleteProviderConfigRequest{Kind: "bucket", KindVersion: 1, Name: "big"})
	lcRefused(t, "delete twice", err, connect.CodeNotFound, `provider config "big" of kind bucket v1 not found`)
}

func TestProviderConfigRefusals(t *testing.T) {
	h := newLCHarness(t, 0)
	ctx := context.Background()
	h.kind(t, bucketKind)

	_, err := h.applyConfig("nope", "default", `{}`)
	lcRefused(t, "unknown kind", err, connect.CodeNotFound, "kind nope v1 is not registered")
	_, err = h.applyConfig("bucket", "Not_A_Name", `{"region":"eu"}`)
	lcRefused(t, "bad name", err, connect.CodeInvalidArgument, "config.name")
	_, err = h.applyConfig("bucket", "default", `{"region":5}`)
	lcRefused(t, "bad default", err, connect.CodeInvalidArgument, "config.region: ")
	_, err = h.applyConfig("bucket", "default", `{"region":"eu","zones":[{"name":1}]}`)
	lcRefused(t, "bad nested value", err, connect.CodeInvalidArgument, "config.zones[0].name: ")
	_, err = h.applyConfig("bucket", "solo", `{"size":1,"tier":"s"}`)
	lcRefused(t, "named with no default", err, connect.CodeInvalidArgument, "config: ", "region")

	h.mustConfig(t, "bucket", "default", `{"region":"eu","tier":"std"}`, "created")
	h.mustConfig(t, "bucket", "small", `{"size":1}`, "created")
	h.mustConfig(t, "bucket", "big", `{"size":9}`, "created")
	h.mustConfig(t, "bucket", "us", `{"region":"us"}`, "created")
	_, err = h.applyConfig("bucket", "bad", `{"region":["x"]}`)
	lcRefused(t, "named breaking its own key", err, connect.CodeInvalidArgument,
		"config.region: ", `config "bad" merged onto the default config of bucket v1`)

	// A default that is fine alone but breaks named configs merged onto it.
	_, err = h.applyConfig("bucket", "default", `{"region":"eu"}`)
	lcRefused(t, "default breaking named", err, connect.CodeInvalidArgument,
		"would break 2 named configs", `named config "big": config: `, `named config "small": config: `, "tier")
	if strings.Contains(err.Error(), `"us"`) {
		t.Fatalf("names a config that stays valid: %v", err)
	}
	// Deleting the default leaves named configs alone: refused while one needs it.
	_, err = h.ctl.DeleteProviderConfig(ctx, &convergev1.DeleteProviderConfigRequest{Kind: "bucket", KindVersion: 1, Name: "default"})
	lcRefused(t, "delete needed default", err, connect.CodeFailedPrecondition,
		"the default config of bucket v1 cannot be deleted", `named config "small"`, "config: ")
}

func TestResourceProviderConfigAPI(t *testing.T) {
	h := newLCHarness(t, 0)
	ctx := context.Background()
	h.kind(t, bucketKind)
	h.mustConfig(t, "bucket", "default", `{"region":"eu"}`, "created")
	h.mustConfig(t, "bucket", "eu-west", `{"region":"eu-west"}`, "created")

	apply := func(name, config string) (*convergev1.ApplyResourceResponse, error) {
		return h.ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "bucket", KindVersion: 1, Name: name,
			Spec: lcStruct(t, `{"x":1}`), ProviderConfig: config})
	}
	_, err := apply("a", "nope")
	lcRefused(t, "missing config", err, connect.CodeFailedPrecondition, "provider_config", `no provider config named "nope"`)

	res, err := apply("a", "eu-west")
	if err != nil || res.GetResource().GetProviderConfig() != "eu-west" || res.GetResult() != "created" {
		t.Fatalf("apply with a config = %v, %v", res, err)
	}
	got, err := h.ctl.GetResource(ctx, &convergev1.GetResourceRequest{Kind: "bucket", Name: "a"})
	if err != nil || got.GetResource().GetProviderConfig() != "eu-west" {
		t.Fatalf("get = %v, %v", got, err)
	}
	// Naming the default is naming none; the change is a new generation.
	res, err = apply("a", "default")
	if err != nil || res.GetResource().GetProviderConfig() != "" || res.GetResult() != "configured" || res.GetResource().GetGeneration() != 2 {
		t.Fatalf("apply with the default = %v, %v", res, err)
	}
	if _, err := apply("b", "eu-west"); err != nil {
		t.Fatal(err)
	}
	_, err = h.ctl.DeleteProviderConfig(ctx, &convergev1.DeleteProviderConfigRequest{Kind: "bucket", KindVersion: 1, Name: "eu-west"})
	lcRefused(t, "delete in use", err, connect.CodeFailedPrecondition, "used by 1 resource(s), e.g. default/bucket/b")
}
