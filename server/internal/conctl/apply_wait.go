package conctl

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// A group of at most this many resources of one namespace and kind is read
// with GetResource each; a larger one with a summary listing of the kind.
const maxGetsPerGroup = 20

// waitItem is what the waiter knows about one applied resource.
type waitItem struct {
	rec     *applied
	known   bool
	gone    bool
	phase   string
	gen     int64 // current generation
	synced  int64
	message string
	version int64 // resource_version of what we know; older news is ignored
}

func (it *waitItem) ready() bool {
	return it.known && !it.gone && it.phase == client.PhaseReady && it.synced >= it.rec.Generation
}

func (it *waitItem) failed() bool {
	return it.known && !it.gone && it.phase == client.PhaseFailed && it.gen >= it.rec.Generation
}

func (it *waitItem) settled() bool { return it.gone || it.ready() || it.failed() }

// state names what an unsettled or settled item is doing, for progress.
func (it *waitItem) state() string {
	switch {
	case it.gone:
		return "deleted"
	case !it.known || it.phase == "":
		return "pending"
	case it.phase == client.PhaseReady && !it.ready():
		return strings.ToLower(client.PhaseReconciling)
	}
	return strings.ToLower(it.phase)
}

func (it *waitItem) id() string {
	return it.rec.Namespace + "/" + it.rec.Kind + "/" + it.rec.Name
}

// waiter follows the applied resources until each is Ready or Failed.
type waiter struct {
	a        *app
	items    []*waitItem
	byID     map[string]*waitItem
	progress io.Writer
	inPlace  bool
	last     string
}

func (a *app) waitApplied(parent context.Context, recs []*applied, timeout time.Duration) error {
	w := &waiter{a: a, byID: map[string]*waitItem{}, progress: a.stdout, inPlace: *a.terminal}
	if a.output != formatTable {
		w.progress, w.inPlace = a.stderr, false
	}
	for _, r := range recs {
		it := &waitItem{rec: r}
		w.items = append(w.items, it)
		w.byID[it.id()] = it
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	err := a.client.Follow(ctx, w.watchRequest(), func(resp *convergev1.WatchResponse) error {
		if resp.GetHeartbeat() {
			if err := w.refresh(ctx); err != nil {
				return err
			}
		}
		for _, ch := range resp.GetChanges() {
			w.change(ch)
		}
		w.render()
		if w.done() {
			return client.ErrStop
		}
		return nil
	})
	if w.inPlace && w.last != "" {
		fmt.Fprintln(w.progress)
	}
	for _, it := range w.items {
		it.rec.Phase, it.rec.Message = it.phase, it.message
		if it.gone {
			it.rec.Phase, it.rec.Message = "", "deleted while waiting"
		}
	}
	return w.verdict(ctx, parent, err, timeout)
}

// verdict reports failures and turns the outcome into conctl's result.
func (w *waiter) verdict(ctx, parent context.Context, err error, timeout time.Duration) error {
	var failed, waiting []string
	for _, it := range w.items {
		switch {
		case it.failed() || it.gone:
			msg := it.message
			if it.gone {
				msg = "deleted while waiting"
			} else if msg == "" {
				// A composite fails through its children: the change feed
				// carries no message, the resource's conditions name them.
				if r, err := w.a.client.GetResource(parent, &convergev1.GetResourceRequest{Namespace: it.rec.Namespace, Kind: it.rec.Kind, Name: it.rec.Name}); err == nil {
					msg = resourceMessage(r.GetResource())
				}
			}
			fmt.Fprintf(w.progress, "failed: resource %s: %s\n", it.id(), or(msg, "no message"))
			failed = append(failed, it.id())
		case !it.settled():
			waiting = append(waiting, fmt.Sprintf("%s (%s)", it.id(), or(it.phase, "not yet seen")))
		}
	}
	switch {
	case err != nil && ctx.Err() == nil:
		return wrapf(err, "wait")
	case len(waiting) > 0 && parent.Err() != nil:
		return fmt.Errorf("interrupted while waiting for %d of %d resources: %s", len(waiting), len(w.items), listSome(waiting))
	case len(waiting) > 0:
		return fmt.Errorf("timed out after %s waiting for %d of %d resources: %s", timeout, len(waiting), len(w.items), listSome(waiting))
	case len(failed) > 0:
		return fmt.Errorf("%d of %d resources failed", len(failed), len(w.items))
	}
	if w.a.output == formatTable {
		fmt.Fprintf(w.progress, "%d of %d resources ready\n", len(w.items), len(w.items))
	}
	return nil
}

func listSome(ids []string) string {
	const most = 10
	if len(ids) <= most {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:most], ", ") + fmt.Sprintf(" and %d more", len(ids)-most)
}

// watchRequest narrows the watch to the namespace, kind and name the items
// share.
func (w *waiter) watchRequest() *convergev1.WatchRequest {
	req := &convergev1.WatchRequest{
		Namespace: w.items[0].rec.Namespace, Kind: w.items[0].rec.Kind, Name: w.items[0].rec.Name,
	}
	for _, it := range w.items[1:] {
		if it.rec.Namespace != req.Namespace {
			req.Namespace = ""
		}
		if it.rec.Kind != req.Kind {
			req.Kind = ""
		}
		if it.rec.Name != req.Name {
			req.Name = ""
		}
	}
	if req.Kind == "" {
		req.Name = ""
	}
	return req
}

// refresh reads the current state of every item. It runs when a watch
// stream is registered, so no later change can be missed.
func (w *waiter) refresh(ctx context.Context) error {
	type group struct{ namespace, kind string }
	groups := map[group][]*waitItem{}
	var order []group
	for _, it := range w.items {
		g := group{it.rec.Namespace, it.rec.Kind}
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], it)
	}
	for _, g := range order {
		var err error
		if items := groups[g]; len(items) <= maxGetsPerGroup {
			err = w.getEach(ctx, items)
		} else {
			err = w.listGroup(ctx, g.namespace, g.kind, items)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *waiter) getEach(ctx context.Context, items []*waitItem) error {
	for _, it := range items {
		cctx, cancel := w.a.call(ctx)
		resp, err := w.a.client.GetResource(cctx, &convergev1.GetResourceRequest{
			Namespace: it.rec.Namespace, Kind: it.rec.Kind, Name: it.rec.Name,
		})
		cancel()
		switch {
		case connect.CodeOf(err) == connect.CodeNotFound:
			it.known, it.gone = true, true
		case err != nil:
			return wrapf(err, "read resource %s", it.id())
		default:
			w.observe(it, resp.GetResource())
		}
	}
	return nil
}

func (w *waiter) listGroup(ctx context.Context, namespace, kind string, items []*waitItem) error {
	seen := map[*waitItem]bool{}
	req := &convergev1.ListResourcesRequest{Namespace: namespace, Kind: kind, Summary: true, PageSize: maxBatch}
	for {
		cctx, cancel := w.a.call(ctx)
		resp, err := w.a.client.ListResources(cctx, req)
		cancel()
		if err != nil {
			return wrapf(err, "list %s resources in %s", kind, namespace)
		}
		for _, r := range resp.GetResources() {
			if it, ok := w.byID[r.GetNamespace()+"/"+r.GetKind()+"/"+r.GetName()]; ok {
				w.observe(it, r)
				seen[it] = true
			}
		}
		if resp.GetNextPageToken() == "" {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	for _, it := range items {
		if !seen[it] {
			it.known, it.gone = true, true
		}
	}
	return nil
}

func (w *waiter) observe(it *waitItem, r *convergev1.Resource) {
	if it.known && r.GetResourceVersion() < it.version {
		return
	}
	it.known, it.gone = true, false
	it.phase, it.gen, it.synced = r.GetPhase(), r.GetGeneration(), r.GetSyncedGeneration()
	it.message, it.version = resourceMessage(r), r.GetResourceVersion()
}

func (w *waiter) change(ch *convergev1.Change) {
	it, ok := w.byID[ch.GetNamespace()+"/"+ch.GetKind()+"/"+ch.GetName()]
	if !ok || (it.known && ch.GetResourceVersion() < it.version) {
		return
	}
	it.known, it.version = true, ch.GetResourceVersion()
	if ch.GetType() == "deleted" {
		it.gone = true
		return
	}
	it.gone = false
	it.phase, it.gen, it.synced, it.message = ch.GetPhase(), ch.GetGeneration(), ch.GetSyncedGeneration(), ch.GetMessage()
}

func (w *waiter) done() bool {
	for _, it := range w.items {
		if !it.settled() {
			return false
		}
	}
	return true
}

// render shows progress: rewritten in place on a terminal, else printed
// whenever it changes.
func (w *waiter) render() {
	line := w.summary()
	if line == w.last {
		return
	}
	w.last = line
	if w.inPlace {
		fmt.Fprintf(w.progress, "\r\x1b[K%s", line)
		return
	}
	fmt.Fprintln(w.progress, line)
}

// summary is e.g. "waiting: 3/5 ready, 1 reconciling, 1 failed".
func (w *waiter) summary() string {
	counts := map[string]int{}
	ready := 0
	for _, it := range w.items {
		if it.ready() {
			ready++
			continue
		}
		counts[it.state()]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "waiting: %d/%d ready", ready, len(w.items))
	var order []string
	for _, p := range client.Phases() {
		order = append(order, strings.ToLower(p))
	}
	order = append(order, "pending", "deleted")
	for _, s := range order {
		if n := counts[s]; n > 0 {
			fmt.Fprintf(&b, ", %d %s", n, s)
			delete(counts, s)
		}
	}
	rest := slices.Sorted(maps.Keys(counts)) // phases newer than this conctl
	for _, s := range rest {
		fmt.Fprintf(&b, ", %d %s", counts[s], s)
	}
	return b.String()
}
