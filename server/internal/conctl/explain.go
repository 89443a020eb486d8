package conctl

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func (a *app) explainCmd() *cobra.Command {
	var maxCauses int
	cmd := &cobra.Command{
		Use:   "explain KIND/NAME",
		Short: "Say why a resource is not Ready: its root causes and what would unblock each",
		Long: `Explain follows what a resource waits on (the dependencies its gate waits
for, the children that keep a composite from Ready, the dependents its
deletion waits for) down to the resources that are blocked for a reason of
their own: a terminal failure, a retry backoff, the kind's max_inflight cap,
no connected or no ready worker, quarantine, an orphan's grace, a value
that has not flowed yet. For each it prints the scheduler's reason, the
evidence, the path from the resource, and what would unblock it.

It exits 0 whatever it finds; a Ready resource has nothing to explain.
-o json and -o yaml print the API's ExplainResourceResponse.`,
		Example: `  conctl explain landingzone/acme
  conctl explain greeting/bob -o json`,
		Args: exactArgs(1, "KIND/NAME, e.g. landingzone/acme"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			if maxCauses < 1 || maxCauses > 100 {
				return usagef("--max-causes: %d is not in 1..100", maxCauses)
			}
			return a.explain(cmd.Context(), ref, maxCauses)
		},
	}
	cmd.Flags().IntVar(&maxCauses, "max-causes", 20, "most root causes to report, 1-100")
	return cmd
}

func (a *app) explain(ctx context.Context, ref resourceRef, maxCauses int) error {
	ctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.ExplainResource(ctx, &convergev1.ExplainResourceRequest{
		Namespace: ref.namespace, Kind: ref.kind, Name: ref.name, MaxCauses: int32(maxCauses)})
	if err != nil {
		return wrapf(err, "explain %s", ref)
	}
	if a.machine() {
		return a.printMessages([]proto.Message{resp}, true)
	}
	return writeExplanation(a.stdout, resp, ref.namespace)
}

// writeExplanation prints the causes, one block each, naming resources
// as KIND/NAME when they are in the explained resource's namespace.
func writeExplanation(w io.Writer, resp *convergev1.ExplainResourceResponse, namespace string) error {
	name := func(r *convergev1.ResourceRef) string {
		if r.GetNamespace() == namespace || r.GetNamespace() == "" {
			return r.GetKind() + "/" + r.GetName()
		}
		return r.GetNamespace() + "/" + r.GetKind() + "/" + r.GetName()
	}
	self := name(resp.GetResource())
	causes := resp.GetCauses()
	var b strings.Builder
	switch {
	case len(causes) == 0:
		fmt.Fprintf(&b, "%s is %s: nothing keeps it from Ready.\n", self, resp.GetPhase())
	case len(causes) == 1:
		fmt.Fprintf(&b, "%s is %s because of 1 cause:\n", self, resp.GetPhase())
	default:
		fmt.Fprintf(&b, "%s is %s because of %d causes:\n", self, resp.GetPhase(), len(causes))
	}
	for _, c := range causes {
		fmt.Fprintf(&b, "\n%s (%s): %s\n", name(c.GetResource()), c.GetPhase(), c.GetReason())
		if len(c.GetPath()) > 0 {
			steps := make([]string, 0, len(c.GetPath())+1)
			for i, p := range c.GetPath() {
				step := name(p)
				if i < len(c.GetVia()) {
					step += " -" + c.GetVia()[i] + "->"
				}
				steps = append(steps, step)
			}
			steps = append(steps, name(c.GetResource()))
			fmt.Fprintf(&b, "  path:    %s\n", strings.Join(steps, " "))
		}
		if c.GetMessage() != "" {
			fmt.Fprintf(&b, "  why:     %s\n", c.GetMessage())
		}
		if c.GetUntil() != nil {
			fmt.Fprintf(&b, "  until:   %s\n", c.GetUntil().AsTime().UTC().Format(time.RFC3339))
		}
		if c.GetUnblock() != "" {
			fmt.Fprintf(&b, "  unblock: %s\n", c.GetUnblock())
		}
	}
	if resp.GetTruncated() {
		fmt.Fprintf(&b, "\n(more causes than shown: raise --max-causes, or explain one of them)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
