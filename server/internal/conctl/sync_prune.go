package conctl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/document"
)

// prune lists the app's members again, now that the tree is applied, and
// requests the deletion of each one the tree does not declare, unless it
// opted out. A deletion already requested is not requested again.
func (a *app) prune(ctx context.Context, sc *appScope, docs []*document.Document) ([]*syncItem, error) {
	members, err := a.listScope(ctx, sc.app)
	if err != nil {
		return nil, err
	}
	declared := map[string]bool{}
	for _, d := range docs {
		r := d.Message.(*convergev1.ApplyResourceRequest)
		declared[syncKey(r.GetNamespace(), r.GetKind(), r.GetName())] = true
	}
	items := pruneCandidatesOf(members, declared)
	for _, it := range items {
		switch {
		case it.Action == syncKeep:
			it.Result = keptResult
		case it.deleting:
			it.Result = "deleting"
		default:
			cctx, cancel := a.call(ctx)
			_, err := a.client.DeleteResource(cctx, &convergev1.DeleteResourceRequest{Namespace: it.Namespace, Kind: it.Kind, Name: it.Name})
			cancel()
			switch {
			case connect.CodeOf(err) == connect.CodeNotFound:
				it.Result = "deleted"
			case err != nil:
				return items, wrapf(err, "prune resource %s", it.id())
			default:
				it.Result = "deleting"
			}
		}
		a.reportLine("resource %s %s", it.id(), pruneLine(it))
	}
	return items, nil
}

// pruneLine is how a pruned resource's result reads in a table.
func pruneLine(it *syncItem) string {
	if it.Result == "deleting" {
		return "deleting (pruned)"
	}
	return it.Result
}

// waitPruned waits until every pruned resource whose deletion sync
// requested is gone.
func (a *app) waitPruned(ctx context.Context, items []*syncItem, timeout time.Duration) error {
	var gone, total int
	for _, it := range items {
		if it.Action != syncDelete || it.Result == "deleted" {
			continue
		}
		total++
		if timeout <= 0 {
			return fmt.Errorf("timed out before waiting for pruned resource %s to be deleted", it.id())
		}
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, timeout)
		last, err := a.client.WaitFor(wctx, it.Namespace, it.Kind, it.Name, func(*convergev1.Resource) bool { return false })
		cancel()
		timeout -= time.Since(start)
		switch {
		case connect.CodeOf(err) == connect.CodeNotFound:
			it.Result, it.Phase = "deleted", ""
			gone++
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			it.Phase, it.Message = last.GetPhase(), resourceMessage(last)
			return fmt.Errorf("timed out waiting for pruned resource %s to be deleted (phase %s)", it.id(), or(last.GetPhase(), "unknown"))
		case ctx.Err() != nil:
			return fmt.Errorf("interrupted while waiting for pruned resource %s to be deleted", it.id())
		default:
			return wrapf(err, "wait for pruned resource %s to be deleted", it.id())
		}
	}
	if total > 0 && a.output == formatTable {
		fmt.Fprintf(a.stdout, "%d of %d pruned resources deleted\n", gone, total)
	}
	return nil
}
