package conctl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/document"
)

// What sync does, or would do, with one resource.
const (
	syncCreate    = "create"
	syncUpdate    = "update"
	syncUnchanged = "unchanged"
	syncDelete    = "delete"
	syncKeep      = "keep"
)

// keptResult is how a resource that opted out of pruning is reported.
const keptResult = "kept (" + pruneLabel + "=false)"

// syncItem is one resource of sync's plan and report.
type syncItem struct {
	Namespace   string `json:"namespace"`
	Kind        string `json:"kind"`
	KindVersion int32  `json:"kind_version,omitempty"`
	Name        string `json:"name"`
	// Source is where the tree declares it; empty for a resource to prune.
	Source string `json:"source,omitempty"`
	// Action is create, update, unchanged, delete or keep.
	Action string `json:"action"`
	// Changes says what an update changes: spec, labels, kind_version,
	// deletion_policy, provider_config, management_policy, import.
	Changes []string `json:"changes,omitempty"`
	// Result is what the server did (not set by --dry-run): created,
	// configured, relabeled, unchanged, deleting, deleted or kept.
	Result     string `json:"result,omitempty"`
	UID        string `json:"uid,omitempty"`
	Generation int64  `json:"generation,omitempty"`
	Phase      string `json:"phase,omitempty"`
	Message    string `json:"message,omitempty"`

	deleting bool // a delete whose deletion was already requested
}

func (it *syncItem) id() string { return it.Namespace + "/" + it.Kind + "/" + it.Name }

// syncDocuments checks that every document is a resource that does not
// claim another app, stamps the app label on each, and refuses two
// documents for the same resource. It reports every problem it finds.
func syncDocuments(docs []*document.Document, sc *appScope) ([]*document.Document, error) {
	var errs []error
	var resources []*document.Document
	for _, d := range docs {
		r, ok := d.Message.(*convergev1.ApplyResourceRequest)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: a %q document: sync applies resources only "+
				"(kinds, provider configs and reactor bindings belong to `conctl catalog publish` or `conctl apply`)", d.Where(), d.Type))
			continue
		}
		if v, set := r.GetLabels()[appLabel]; set && v != sc.app {
			errs = append(errs, fmt.Errorf("%s: labels.%s: %q, but this tree is app %q (%s): "+
				"leave the label out, sync sets it", d.Where(), appLabel, v, sc.app, sc.markerPath))
			continue
		}
		if r.Labels == nil {
			r.Labels = map[string]string{}
		}
		r.Labels[appLabel] = sc.app
		resources = append(resources, d)
	}
	if _, err := planApply(resources); err != nil {
		errs = append(errs, err)
	}
	return resources, errors.Join(errs...)
}

// planSync compares the declared resources with the server's and, with
// prune, lists the members of the app the tree no longer declares.
func (a *app) planSync(ctx context.Context, sc *appScope, docs []*document.Document, prune bool) ([]*syncItem, int, error) {
	members, err := a.listScope(ctx, sc.app)
	if err != nil {
		return nil, 0, err
	}
	byKey := map[string]*convergev1.Resource{}
	for _, r := range members {
		byKey[syncKey(r.GetNamespace(), r.GetKind(), r.GetName())] = r
	}
	var items []*syncItem
	var errs []error
	declared := map[string]bool{}
	for _, d := range docs {
		want := d.Message.(*convergev1.ApplyResourceRequest)
		key := syncKey(want.GetNamespace(), want.GetKind(), want.GetName())
		declared[key] = true
		have, ok := byKey[key]
		if !ok {
			if have, err = a.currentResource(ctx, want); err != nil {
				return nil, 0, wrapf(err, "%s: read resource %s", d.Where(), key)
			}
		}
		if owner := have.GetLabels()[appLabel]; have != nil && owner != "" && owner != sc.app {
			errs = append(errs, fmt.Errorf("%s: resource %s belongs to app %q (label %s=%s); "+
				"sync will not take it from another app", d.Where(), key, owner, appLabel, owner))
			continue
		}
		it := &syncItem{Namespace: want.GetNamespace(), Kind: want.GetKind(), KindVersion: want.GetKindVersion(),
			Name: want.GetName(), Source: d.Where(), Action: syncCreate}
		if have != nil {
			it.Changes = resourceChanges(have, want)
			it.Action = syncUnchanged
			if len(it.Changes) > 0 {
				it.Action = syncUpdate
			}
		}
		items = append(items, it)
	}
	if len(errs) > 0 {
		return nil, 0, errors.Join(errs...)
	}
	undeclared := pruneCandidatesOf(members, declared)
	if !prune {
		return items, len(undeclared), nil
	}
	return append(items, undeclared...), 0, nil
}

// currentResource is the server's resource a document names, nil when
// there is none.
func (a *app) currentResource(ctx context.Context, want *convergev1.ApplyResourceRequest) (*convergev1.Resource, error) {
	cctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.GetResource(cctx, &convergev1.GetResourceRequest{
		Namespace: want.GetNamespace(), Kind: want.GetKind(), Name: want.GetName()})
	if connect.CodeOf(err) == connect.CodeNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return resp.GetResource(), nil
}

// listScope lists every resource labelled as a member of app, in every
// namespace and of every kind, page by page.
func (a *app) listScope(ctx context.Context, app string) ([]*convergev1.Resource, error) {
	req := &convergev1.ListResourcesRequest{LabelSelector: appLabel + "=" + app, PageSize: maxBatch}
	var out []*convergev1.Resource
	for {
		cctx, cancel := a.call(ctx)
		resp, err := a.client.ListResources(cctx, req)
		cancel()
		if err != nil {
			return nil, wrapf(err, "list the resources of app %s (label %s=%s)", app, appLabel, app)
		}
		out = append(out, resp.GetResources()...)
		if resp.GetNextPageToken() == "" {
			return out, nil
		}
		req.PageToken = resp.GetNextPageToken()
	}
}

// pruneCandidatesOf lists the members of the app that are not declared, in
// (namespace, kind, name) order. A resource with an owner is a composite's
// child, whose life its composite decides: it is never a candidate, even
// if its composer copied the app label onto it.
func pruneCandidatesOf(members []*convergev1.Resource, declared map[string]bool) []*syncItem {
	var out []*syncItem
	for _, r := range members {
		if r.GetOwner() != nil || declared[syncKey(r.GetNamespace(), r.GetKind(), r.GetName())] {
			continue
		}
		it := &syncItem{Namespace: r.GetNamespace(), Kind: r.GetKind(), KindVersion: r.GetKindVersion(), Name: r.GetName(),
			Action: syncDelete, UID: r.GetUid(), Phase: r.GetPhase(), deleting: r.GetDeletionRequestedAt() != nil}
		if r.GetLabels()[pruneLabel] == "false" {
			it.Action = syncKeep
		}
		out = append(out, it)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id() < out[j].id() })
	return out
}

// resourceChanges names what applying want would change in have, by the
// server's own test: the spec as a JSON value, the labels as a map, the
// kind version, the deletion policy, the named provider config, and the
// management policy and import when the document names them.
func resourceChanges(have *convergev1.Resource, want *convergev1.ApplyResourceRequest) []string {
	var changes []string
	if !proto.Equal(specOrEmpty(have.GetSpec()), specOrEmpty(want.GetSpec())) {
		changes = append(changes, "spec")
	}
	if !maps.Equal(have.GetLabels(), want.GetLabels()) {
		changes = append(changes, "labels")
	}
	if have.GetKindVersion() != want.GetKindVersion() {
		changes = append(changes, "kind_version")
	}
	if have.GetDeletionPolicy() != want.GetDeletionPolicy() {
		changes = append(changes, "deletion_policy")
	}
	if storedConfigName(have.GetProviderConfig()) != storedConfigName(want.GetProviderConfig()) {
		changes = append(changes, "provider_config")
	}
	// Left out of the document, these keep what the resource has.
	if p := want.GetManagementPolicy(); p != "" && p != have.GetManagementPolicy() {
		changes = append(changes, "management_policy")
	}
	if id := want.GetImport().GetId(); id != "" && id != have.GetImport().GetId() {
		changes = append(changes, "import")
	}
	return changes
}

// specOrEmpty treats a missing spec as the empty object, as the server does.
func specOrEmpty(s *structpb.Struct) *structpb.Struct {
	if s == nil {
		return &structpb.Struct{}
	}
	return s
}

// storedConfigName is a provider config name as the server stores it: naming
// the default config is the same as naming none.
func storedConfigName(name string) string {
	if name == "default" {
		return ""
	}
	return name
}

func syncKey(namespace, kind, name string) string { return namespace + "/" + kind + "/" + name }
