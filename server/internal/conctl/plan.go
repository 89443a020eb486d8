package conctl

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/document"
	"github.com/convergehq/converge/server/internal/conctl/unidiff"
)

type planFlags struct {
	files   []string
	timeout int32
}

func (a *app) planCmd() *cobra.Command {
	var fl planFlags
	cmd := &cobra.Command{
		Use:   "plan -f FILE|DIR [-f ...]",
		Short: "Show what applying files would do, down to the children composites would make",
		Long: `Plan shows what conctl apply of the same files would do, and changes nothing.

The server applies the kinds and resources as a dry run (see --dry-run),
answering each resource's spec diff and whether its generation would bump.
Then, for each composite among the resources, it sends a preview task to a
connected worker serving the composite's composer: the task the composer
would get after the change, marked as a preview, whose answer is never
applied. Go and TypeScript workers, std.graph kinds (stdcel) and Starlark
bundles are all previewed this way. Plan prints the children each composer
would now produce against the children it has: created, updated (with spec
diffs, including the values that would flow along edges from the current
statuses), pruned or orphaned, and the edges added or removed, with totals
at the end. A composite no connected worker composes, or whose worker does
not answer within --preview-timeout, says so.

The plan's id fences an apply of the same files: conctl apply --plan-id ID
refuses if anything the plan read changed since (the documents, the
resources, the statuses whose values would flow, the kind manifests, the
composites' children). Provider configs and reactor bindings in the files
are sent as plain dry runs.`,
		Example: `  conctl plan -f shop.yaml
  conctl plan -f deploy/ -o json
  conctl apply --plan-id plan-0123abcd... -f deploy/`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.plan(cmd.Context(), fl)
		},
	}
	cmd.Flags().StringArrayVarP(&fl.files, "filename", "f", nil, "file, directory or - (stdin) to plan; repeatable")
	cmd.Flags().Int32Var(&fl.timeout, "preview-timeout", 10, "seconds to wait for a worker's preview of each composite (at most 120)")
	return cmd
}

func (a *app) plan(ctx context.Context, fl planFlags) error {
	if len(fl.files) == 0 {
		return usagef("plan needs at least one -f FILE, DIR or - (stdin)")
	}
	if fl.timeout < 1 || fl.timeout > 120 {
		return usagef("--preview-timeout %d: must be between 1 and 120 seconds", fl.timeout)
	}
	docs, err := document.Read(fl.files, a.stdin, document.WithDefaultNamespace(a.namespace))
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		return fmt.Errorf("no documents found in the inputs")
	}
	ap, err := planApply(docs)
	if err != nil {
		return err
	}
	req := &convergev1.PlanChangeRequest{PreviewTimeoutSeconds: fl.timeout}
	var others []*document.Document
	for _, d := range ap.oneByOne {
		if m, ok := d.Message.(*convergev1.KindManifest); ok {
			req.Kinds = append(req.Kinds, m)
		} else {
			others = append(others, d)
		}
	}
	for _, d := range ap.resources {
		req.Resources = append(req.Resources, d.Message.(*convergev1.ApplyResourceRequest))
	}
	a.dryRun = true
	var report []*applied
	for _, d := range others {
		rec, err := a.applyOne(ctx, d)
		if err != nil {
			return err
		}
		report = append(report, rec)
	}
	if len(req.Kinds)+len(req.Resources) == 0 {
		return nil
	}
	cctx, cancel := a.call(ctx)
	defer cancel()
	res, err := a.client.PlanChange(cctx, req)
	if err != nil {
		return wrapf(err, "plan")
	}
	if a.output != formatTable {
		raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(res)
		if err != nil {
			return err
		}
		return a.printJSON(a.stdout, raw)
	}
	for _, k := range res.GetKinds() {
		a.reportLine("kind %s %s", kindID(k.GetManifest().GetKind(), k.GetManifest().GetKindVersion()), k.GetResult())
	}
	if r := res.GetResources(); r != nil {
		printDryRun(a.stdout, r.GetDryRun())
		for _, x := range r.GetResults() {
			a.reportLine("resource %s/%s/%s %s", x.GetNamespace(), x.GetKind(), x.GetName(), x.GetResult())
		}
	}
	printPlans(a.stdout, res)
	return nil
}

func printPlans(w io.Writer, res *convergev1.PlanChangeResponse) {
	for _, p := range res.GetComposites() {
		ref := p.GetComposite()
		who := p.GetComposer()
		if who == "" {
			who = "reaction " + p.GetReaction()
		}
		fmt.Fprintf(w, "composite %s/%s/%s (%s):\n", ref.GetNamespace(), ref.GetKind(), ref.GetName(), who)
		if why := p.GetNotPreviewed(); why != "" {
			fmt.Fprintf(w, "  children not previewed: %s\n", why)
			continue
		}
		for _, c := range p.GetChildren() {
			if c.GetAction() == "unchanged" {
				continue
			}
			key := c.GetKind() + "/" + c.GetName()
			fmt.Fprintf(w, "  %s %s %s\n", planMark[c.GetAction()], c.GetAction(), key)
			var diff string
			switch c.GetAction() {
			case "create":
				diff = unidiff.Unified("/dev/null", key+" spec (planned)", "", specJSON(c.GetSpecAfter()), diffContext)
			case "update":
				diff = unidiff.Unified(key+" spec (now)", key+" spec (planned)", specJSON(c.GetSpecBefore()), specJSON(c.GetSpecAfter()), diffContext)
			}
			for _, line := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
				if line != "" {
					fmt.Fprintf(w, "      %s\n", line)
				}
			}
			if why := c.GetWaiting(); why != "" {
				fmt.Fprintf(w, "      %s\n", why)
			}
		}
		for _, e := range p.GetEdgesAdded() {
			fmt.Fprintf(w, "  + edge %s\n", edgeText(e))
		}
		for _, e := range p.GetEdgesRemoved() {
			fmt.Fprintf(w, "  - edge %s\n", edgeText(e))
		}
	}
	t := res.GetTotals()
	line := fmt.Sprintf("Plan: %d child(ren) to create, %d to update, %d to prune, %d to orphan, %d unchanged, across %d composite(s)",
		t.GetCreate(), t.GetUpdate(), t.GetPrune(), t.GetOrphan(), t.GetUnchanged(), t.GetComposites())
	if n := t.GetNotPreviewed(); n > 0 {
		line += fmt.Sprintf("; %d composite(s) not previewed", n)
	}
	fmt.Fprintln(w, line+"; nothing was changed.")
	fmt.Fprintf(w, "To apply exactly this plan: conctl apply --plan-id %s -f ...\n", res.GetPlanId())
}

func edgeText(e *convergev1.PlannedEdge) string {
	d := e.GetDependency()
	dep := d.GetKind() + "/" + d.GetName()
	if d.GetNamespace() != e.GetDependent().GetNamespace() {
		dep = d.GetNamespace() + "/" + dep
	}
	return e.GetDependent().GetKind() + "/" + e.GetDependent().GetName() + " -> " + dep
}

var planMark = map[string]string{"create": "+", "update": "~", "prune": "-", "orphan": "-"}
