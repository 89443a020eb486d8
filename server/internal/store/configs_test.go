package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/server/internal/store"
)

// cfgKind registers kind at version with a manifest the store does not
// interpret, and returns its revision.
func cfgKind(t *testing.T, s *store.Store, kind string, version int32, p store.Policy) int64 {
	t.Helper()
	k, _, err := s.ApplyKind(context.Background(), store.Kind{Kind: kind, Version: version,
		Manifest: []byte(`{"kind":"` + kind + `"}`), Policy: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k.Revision
}

// cfgValidator validates effective configs against a JSON schema, the
// way the API does.
func cfgValidator(t *testing.T, rev int64, schemaJSON string) store.ConfigValidator {
	t.Helper()
	doc, err := schema.Decode([]byte(schemaJSON))
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schema.Compile("config_schema", doc)
	if err != nil {
		t.Fatal(err)
	}
	return store.ConfigValidator{KindRevision: rev, Validate: func(effective []byte) error {
		v, err := schema.Decode(effective)
		if err != nil {
			return err
		}
		return sch.Validate(v)
	}}
}

// regionSchema requires a string region; size is an optional integer.
const regionSchema = `{"type":"object","required":["region"],
	"properties":{"region":{"type":"string"},"size":{"type":"integer"}}}`

func cfgApply(t *testing.T, s *store.Store, v store.ConfigValidator, name, config string) (store.ProviderConfig, string) {
	t.Helper()
	c, result, err := s.ApplyProviderConfig(context.Background(),
		store.ProviderConfig{Kind: "leaf", Version: 1, Name: name, Config: []byte(config)}, v)
	if err != nil {
		t.Fatalf("apply config %s %s: %v", name, config, err)
	}
	return c, result
}

func cfgApplyErr(t *testing.T, s *store.Store, v store.ConfigValidator, name, config string) error {
	t.Helper()
	_, _, err := s.ApplyProviderConfig(context.Background(),
		store.ProviderConfig{Kind: "leaf", Version: 1, Name: name, Config: []byte(config)}, v)
	if err == nil {
		t.Fatalf("apply config %s %s: accepted, want a refusal", name, config)
	}
	return err
}

func wantErr(t *testing.T, err, sentinel error, parts ...string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("err = %v, want %v", err, sentinel)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("err = %q, want it to contain %q", err, p)
		}
	}
}

func TestMergeConfig(t *testing.T) {
	for _, tc := range []struct{ def, named, want string }{
		{`{"region":"eu","size":1}`, `{"size":3}`, `{"region":"eu","size":3}`},
		// Top-level keys only: a nested object replaces the default's whole.
		{`{"tags":{"a":"1","b":"2"}}`, `{"tags":{"b":"3"}}`, `{"tags":{"b":"3"}}`},
		{``, `{"x":1}`, `{"x":1}`},
		{`{"x":1}`, ``, `{"x":1}`},
		{``, ``, `{}`},
	} {
		got, err := store.MergeConfig([]byte(tc.def), []byte(tc.named))
		if err != nil || string(got) != tc.want {
			t.Errorf("MergeConfig(%s, %s) = %s, %v; want %s", tc.def, tc.named, got, err, tc.want)
		}
	}
	if _, err := store.MergeConfig([]byte(`[1]`), nil); err == nil {
		t.Error("MergeConfig of an array: no error")
	}
}

func TestProviderConfigApplyGetList(t *testing.T) {
	s, ctx := newStore(t)
	rev := cfgKind(t, s, "leaf", 1, store.Policy{})
	cfgKind(t, s, "other", 1, store.Policy{})
	v := cfgValidator(t, rev, `{"type":"object"}`)

	c, result := cfgApply(t, s, v, "default", `{"region":"eu"}`)
	if result != "created" || c.Revision != 1 || string(c.Config) != `{"region": "eu"}` {
		t.Fatalf("create = %+v, %s", c, result)
	}
	if c, result = cfgApply(t, s, v, "default", `{"region":"eu"}`); result != "unchanged" || c.Revision != 1 {
		t.Fatalf("same again = %+v, %s", c, result)
	}
	if c, result = cfgApply(t, s, v, "default", `{"region":"us"}`); result != "configured" || c.Revision != 2 {
		t.Fatalf("changed = %+v, %s", c, result)
	}
	// A description change alone is a change too.
	c, result, err := s.ApplyProviderConfig(ctx, store.ProviderConfig{Kind: "leaf", Version: 1, Name: "default",
		Config: []byte(`{"region":"us"}`), Description: "prod account"}, v)
	if err != nil || result != "configured" || c.Revision != 3 || c.Description != "prod account" {
		t.Fatalf("description = %+v, %s, %v", c, result, err)
	}
	cfgApply(t, s, v, "big", `{"size":3}`)
	if _, _, err := s.ApplyProviderConfig(ctx, store.ProviderConfig{Kind: "other", Version: 1, Name: "default",
		Config: []byte(`{}`)}, store.ConfigValidator{KindRevision: 1, Validate: func([]byte) error { return nil }}); err != nil {
		t.Fatal(err)
	}

	got, err := s.GetProviderConfig(ctx, "leaf", 1, "big")
	if err != nil || string(got.Config) != `{"size": 3}` {
		t.Fatalf("get = %+v, %v", got, err)
	}
	_, err = s.GetProviderConfig(ctx, "leaf", 1, "nope")
	wantErr(t, err, store.ErrNotFound, `provider config "nope" of kind leaf v1 not found`)

	names := func(kind string, version int32) string {
		list, err := s.ListProviderConfigs(ctx, kind, version)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range list {
			out = append(out, c.Kind+"/"+c.Name)
		}
		return strings.Join(out, ",")
	}
	if got := names("", 0); got != "leaf/big,leaf/default,other/default" {
		t.Fatalf("list all = %s", got)
	}
	if got := names("leaf", 1); got != "leaf/big,leaf/default" {
		t.Fatalf("list leaf v1 = %s", got)
	}
	if got := names("leaf", 2); got != "" {
		t.Fatalf("list leaf v2 = %s", got)
	}

	// The kind version must exist; a kind that changed since validation is stale.
	_, _, err = s.ApplyProviderConfig(ctx, store.ProviderConfig{Kind: "leaf", Version: 7, Name: "default", Config: []byte(`{}`)}, v)
	wantErr(t, err, store.ErrNotFound, "kind leaf v7 is not registered")
	stale := v
	stale.KindRevision = rev + 1
	_, _, err = s.ApplyProviderConfig(ctx, store.ProviderConfig{Kind: "leaf", Version: 1, Name: "x", Config: []byte(`{}`)}, stale)
	wantErr(t, err, store.ErrStaleKind)
}

// tierSchema also requires a tier whenever a size is set: a rule a named
// config can break merged onto a default that is valid alone.
const tierSchema = `{"type":"object","required":["region"],
	"properties":{"region":{"type":"string"},"size":{"type":"integer"},"tier":{"type":"string"}},
	"dependentRequired":{"size":["tier"]}}`

func TestProviderConfigMergeValidation(t *testing.T) {
	s, ctx := newStore(t)
	rev := cfgKind(t, s, "leaf", 1, store.Policy{})
	v := cfgValidator(t, rev, tierSchema)

	// With no default, a named config stands alone.
	err := cfgApplyErr(t, s, v, "small", `{"size":1,"tier":"s"}`)
	wantErr(t, err, store.ErrInvalidConfig, "region")
	// The default alone must be valid.
	err = cfgApplyErr(t, s, v, "default", `{"tier":"s"}`)
	wantErr(t, err, store.ErrInvalidConfig, "region")

	cfgApply(t, s, v, "default", `{"region":"eu","tier":"std"}`)
	// Merged onto the default, a named config needs no region or tier of its own.
	cfgApply(t, s, v, "small", `{"size":1}`)
	// Its own keys win, and are checked.
	err = cfgApplyErr(t, s, v, "bad", `{"region":5}`)
	wantErr(t, err, store.ErrInvalidConfig, "/region", `config "bad" merged onto the default config of leaf v1`)
	cfgApply(t, s, v, "us", `{"region":"us"}`)
	cfgApply(t, s, v, "big", `{"size":9}`)

	// A default valid alone that would break named configs is refused,
	// naming each one that breaks and only those.
	err = cfgApplyErr(t, s, v, "default", `{"region":"eu"}`)
	wantErr(t, err, store.ErrInvalidConfig, "would break 2 named configs merged onto it",
		`named config "big"`, `named config "small"`, "tier")
	if strings.Contains(err.Error(), `"us"`) {
		t.Fatalf("err names a named config that stays valid: %v", err)
	}
	if c, err := s.GetProviderConfig(ctx, "leaf", 1, "default"); err != nil || string(c.Config) != `{"tier": "std", "region": "eu"}` {
		t.Fatalf("a refused default was written: %+v, %v", c, err)
	}
	// Once the named configs carry their own tier, the default may drop it.
	cfgApply(t, s, v, "small", `{"size":1,"tier":"s"}`)
	cfgApply(t, s, v, "big", `{"size":9,"tier":"l"}`)
	if _, result := cfgApply(t, s, v, "default", `{"region":"eu"}`); result != "configured" {
		t.Fatalf("valid new default: %s", result)
	}
}

func TestProviderConfigDelete(t *testing.T) {
	s, ctx := newStore(t)
	rev := cfgKind(t, s, "leaf", 1, store.Policy{})
	v := cfgValidator(t, rev, regionSchema)
	cfgApply(t, s, v, "default", `{"region":"eu"}`)
	cfgApply(t, s, v, "small", `{"size":1}`)
	cfgApply(t, s, v, "us", `{"region":"us"}`)

	err := s.DeleteProviderConfig(ctx, "leaf", 1, "nope", v)
	wantErr(t, err, store.ErrNotFound, `provider config "nope" of kind leaf v1 not found`)

	// The default may not go while a named config relies on it.
	err = s.DeleteProviderConfig(ctx, "leaf", 1, "default", v)
	wantErr(t, err, store.ErrConflict, "cannot be deleted", `named config "small"`, "region")

	// A named config in use is refused with the count and an example.
	for _, name := range []string{"b", "a"} {
		if _, _, err := s.ApplyResources(ctx, "test", []store.ApplyInput{{Namespace: "default", Kind: "leaf", KindVersion: 1,
			Name: name, Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: rev, ProviderConfig: "small"}}); err != nil {
			t.Fatal(err)
		}
	}
	err = s.DeleteProviderConfig(ctx, "leaf", 1, "small", v)
	wantErr(t, err, store.ErrConflict, `provider config "small" of kind leaf v1 is used by 2 resource(s), e.g. default/leaf/a`)

	if err := s.DeleteProviderConfig(ctx, "leaf", 1, "us", v); err != nil {
		t.Fatalf("delete unused: %v", err)
	}
	if _, err := s.GetProviderConfig(ctx, "leaf", 1, "us"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted config still there: %v", err)
	}
	stale := v
	stale.KindRevision = rev + 1
	wantErr(t, s.DeleteProviderConfig(ctx, "leaf", 1, "small", stale), store.ErrStaleKind)
}

func TestResourceProviderConfig(t *testing.T) {
	s, ctx := newStore(t)
	rev := cfgKind(t, s, "leaf", 1, store.Policy{})
	rev2 := cfgKind(t, s, "leaf", 2, store.Policy{})
	v := cfgValidator(t, rev, `{"type":"object"}`)
	cfgApply(t, s, v, "default", `{}`)
	cfgApply(t, s, v, "big", `{"size":9}`)

	in := func(version int32, kindRev int64, config string) []store.ApplyInput {
		return []store.ApplyInput{{Namespace: "default", Kind: "leaf", KindVersion: version, Name: "a",
			Labels: []byte(`{}`), Spec: []byte(`{"x":1}`), KindRevision: kindRev, ProviderConfig: config}}
	}
	_, _, err := s.ApplyResources(ctx, "test", in(1, rev, "nope"))
	wantErr(t, err, store.ErrConflict, `resources[0].provider_config: kind leaf v1 has no provider config named "nope"`)
	if _, err := s.GetResource(ctx, "default", "leaf", "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused apply wrote the resource: %v", err)
	}

	res, _, err := s.ApplyResources(ctx, "test", in(1, rev, "big"))
	if err != nil || res[0].Result != "created" {
		t.Fatalf("apply with big = %+v, %v", res, err)
	}
	if r := get(t, s, "a"); r.ProviderConfig != "big" {
		t.Fatalf("provider config = %q", r.ProviderConfig)
	}
	// Changing only the provider config is a change for the worker.
	res, _, err = s.ApplyResources(ctx, "test", in(1, rev, ""))
	if err != nil || res[0].Result != "configured" || res[0].Generation != 2 {
		t.Fatalf("drop the named config = %+v, %v", res, err)
	}
	if r := get(t, s, "a"); r.ProviderConfig != "" || r.Task == nil {
		t.Fatalf("after dropping it: config %q, task %+v", r.ProviderConfig, r.Task)
	}
	res, _, err = s.ApplyResources(ctx, "test", in(1, rev, "big"))
	if err != nil || res[0].Result != "configured" || res[0].Generation != 3 {
		t.Fatalf("name it again = %+v, %v", res, err)
	}
	// Moving versions needs the named config at the new version.
	_, _, err = s.ApplyResources(ctx, "test", in(2, rev2, "big"))
	wantErr(t, err, store.ErrConflict, `kind leaf v2 has no provider config named "big"`)
}

// A delete racing an apply that names the config never leaves a resource
// naming a config that is gone.
func TestProviderConfigDeleteRacesApply(t *testing.T) {
	s, ctx := newStore(t)
	rev := cfgKind(t, s, "leaf", 1, store.Policy{})
	v := cfgValidator(t, rev, `{"type":"object"}`)
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("c%d", i)
		cfgApply(t, s, v, name, `{}`)
		applied, deleted := make(chan error, 1), make(chan error, 1)
		go func() {
			_, _, err := s.ApplyResources(ctx, "test", []store.ApplyInput{{Namespace: "default", Kind: "leaf", KindVersion: 1,
				Name: "r" + name, Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: rev, ProviderConfig: name}})
			applied <- err
		}()
		go func() { deleted <- s.DeleteProviderConfig(ctx, "leaf", 1, name, v) }()
		aErr, dErr := <-applied, <-deleted
		if (aErr == nil) == (dErr == nil) {
			t.Fatalf("round %d: apply err %v, delete err %v: want exactly one to succeed", i, aErr, dErr)
		}
		if aErr != nil && !errors.Is(aErr, store.ErrConflict) || dErr != nil && !errors.Is(dErr, store.ErrConflict) {
			t.Fatalf("round %d: apply err %v, delete err %v", i, aErr, dErr)
		}
	}
}
