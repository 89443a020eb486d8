//go:build unix

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// checkExplain asks explain about every resource once the world has
// quiesced: one that is not Ready (or is being deleted) must be explained
// by at least one root cause, each with a reason and a resource that
// exists, and a Ready one by none. Whatever state the actions left, the
// explanation follows the scheduler's reasons to somewhere.
func (w *world) checkExplain(t tb) {
	t.Helper()
	all := w.listAll(t)
	var bad []string
	for k, r := range all {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		resp, err := w.api.ExplainResource(ctx, &convergev1.ExplainResourceRequest{
			Namespace: r.GetNamespace(), Kind: r.GetKind(), Name: r.GetName()})
		cancel()
		var ce *connect.Error
		if errors.As(err, &ce) && ce.Code() == connect.CodeNotFound {
			continue // deleted since the listing
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: explain failed: %v", k, err))
			continue
		}
		settled := r.GetPhase() == client.PhaseReady && r.GetDeletionRequestedAt() == nil
		causes := resp.GetCauses()
		switch {
		case settled && len(causes) > 0 && resp.GetPhase() == client.PhaseReady:
			bad = append(bad, fmt.Sprintf("%s is Ready, yet explain names %d causes: %v", k, len(causes), causes))
		case !settled && len(causes) == 0 && !resp.GetTruncated() && resp.GetPhase() != client.PhaseReady:
			bad = append(bad, fmt.Sprintf("%s is %s, yet explain names no cause", k, resp.GetPhase()))
		}
		for _, c := range causes {
			if c.GetReason() == "" || c.GetResource().GetName() == "" {
				bad = append(bad, fmt.Sprintf("%s: a cause without a reason or resource: %v", k, c))
			}
		}
	}
	if len(bad) > 0 {
		w.logBoth(t, "INVARIANT BROKEN: explain:\n  %s\n%s", strings.Join(bad, "\n  "), w.report(all))
		t.Fatalf("invariant broken: explain does not account for the world's state")
	}
}
