package conctl

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/document"
)

// maxBatch is the most resources one ApplyResources call may carry.
const maxBatch = 1000

type applyFlags struct {
	files []string
	waitFlags
}

func (a *app) applyCmd() *cobra.Command {
	var fl applyFlags
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|- [-f ...]",
		Short: "Create or update kinds, provider configs, reactor bindings and resources from files",
		Long: `Apply reads every document from the given files, directories (recursively:
.yaml, .yml and .json files in path order) and standard input ("-"), checks
them all, and only then sends them: a mistake anywhere applies nothing.

Each document names what it is with a top-level "type":
  manifest        a kind: its schemas, reactions and policy
  providerconfig  settings for the workers of a kind version: kind,
                  kind_version, name ("default", or a name resources pick),
                  config (checked against the kind's config_schema) and
                  description
  reactorbinding  which changes a reactor kind hears of: name, watch_kind,
                  watch_kind_version (0 or left out: every version),
                  transitions (created, synced, degraded, failed, deleted),
                  label_selector, reactor_kind, reactor_kind_version and
                  disabled
  resource        an instance of a kind: kind, kind_version, name, labels,
                  spec, provider_config (a named config on top of the
                  default), deletion_policy (delete or retain; left out:
                  the kind's), management_policy (full or observe; left
                  out: as it is, or the kind's for a new resource) and
                  import ({id: ...}: adopt that existing object instead of
                  creating one)

They are applied in that order, so a document may rely on the ones above
it: kinds, provider configs and reactor bindings one at a time, then
resources in transactions of up to 1,000 that each apply all or nothing. A
resource without a namespace goes to --namespace. Each document prints one
line with the server's result: created, configured, relabeled or unchanged.

With --wait, apply then waits until every applied resource is Ready or
Failed, prints each failure with its message, and exits 1 if any failed or
the wait timed out.`,
		Example: `  # Apply one file
  conctl apply -f greeting.yaml

  # Apply a kind and a directory of resources, and wait for the outcome
  conctl apply -f kinds/greeting.yaml -f app/ --wait --timeout 10m

  # Apply from standard input
  cat hello.yaml | conctl apply -f -

  # A resource document
  #   type: resource
  #   kind: greeting
  #   kind_version: 1
  #   name: hello-world
  #   deletion_policy: retain    # optional: deleting it forgets it, no teardown
  #   provider_config: eu        # optional: a named config, over the default
  #   management_policy: observe # optional: only observe it, never change it
  #   import: {id: hw-0042}      # optional: adopt this existing object
  #   spec:
  #     greeting: Hello

  # A provider config and a reactor binding
  #   type: providerconfig
  #   kind: greeting
  #   kind_version: 1
  #   name: default
  #   config:
  #     region: eu-west-1
  #   ---
  #   type: reactorbinding
  #   name: notify-failures
  #   watch_kind: greeting
  #   transitions: [failed, degraded]
  #   reactor_kind: notifier
  #   reactor_kind_version: 1`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.apply(cmd.Context(), fl)
		},
	}
	cmd.Flags().StringArrayVarP(&fl.files, "filename", "f", nil, "file, directory or - (stdin) to apply; repeatable")
	fl.register(cmd, "wait until every applied resource is Ready or Failed")
	a.dryRunFlag(cmd, false)
	cmd.Flags().StringVar(&a.planID, "plan-id", "", "apply only if nothing the plan of this id (conctl plan) read has changed since; the files must be the ones planned")
	return cmd
}

// applied is one line of apply's report.
type applied struct {
	Type        string `json:"type"`
	Namespace   string `json:"namespace,omitempty"`
	Kind        string `json:"kind,omitempty"`
	KindVersion int32  `json:"kind_version,omitempty"`
	Name        string `json:"name,omitempty"`
	UID         string `json:"uid,omitempty"`
	Generation  int64  `json:"generation,omitempty"`
	Result      string `json:"result"`
	Phase       string `json:"phase,omitempty"`
	Message     string `json:"message,omitempty"`
}

func (a *app) apply(ctx context.Context, fl applyFlags) error {
	if len(fl.files) == 0 {
		return usagef("apply needs at least one -f FILE, DIR or - (stdin)")
	}
	if err := fl.check(a.stderr); err != nil {
		return err
	}
	docs, err := document.Read(fl.files, a.stdin, document.WithDefaultNamespace(a.namespace))
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		return errors.New("no documents found in the inputs")
	}
	plan, err := planApply(docs)
	if err != nil {
		return err
	}
	if a.planID != "" {
		for _, d := range plan.oneByOne {
			if _, ok := d.Message.(*convergev1.KindManifest); !ok {
				return usagef("--plan-id: a plan covers kinds and resources; %s is a %s document (apply it on its own)", d.Where(), d.Type)
			}
		}
	}

	var report []*applied
	err = a.applyAll(ctx, plan, fl, &report)
	if a.output != formatTable && len(report) > 0 {
		if perr := a.printValue(report); perr != nil && err == nil {
			err = perr
		}
	}
	return err
}

func (a *app) applyAll(ctx context.Context, plan *applyPlan, fl applyFlags, report *[]*applied) error {
	for _, d := range plan.oneByOne {
		rec, err := a.applyOne(ctx, d)
		if err != nil {
			return err
		}
		*report = append(*report, rec)
	}
	resources := plan.resources
	for start := 0; start < len(resources); start += maxBatch {
		end := min(start+maxBatch, len(resources))
		recs, err := a.applyBatch(ctx, resources, start, end)
		if err != nil {
			return err
		}
		*report = append(*report, recs...)
	}
	if !fl.wait || len(resources) == 0 {
		return nil
	}
	var tracked []*applied
	for _, r := range *report {
		if r.Type == "resource" {
			tracked = append(tracked, r)
		}
	}
	return a.waitApplied(ctx, tracked, fl.timeout)
}

// applyPlan is what apply sends, in order: kinds, provider configs and
// reactor bindings one at a time, then resources in batches.
type applyPlan struct {
	oneByOne  []*document.Document
	resources []*document.Document
}

// planApply orders documents by type, in the order of document.Types, and
// refuses two documents for the same object: the second would silently win.
func planApply(docs []*document.Document) (*applyPlan, error) {
	byType := map[string][]*document.Document{}
	first := map[string]*document.Document{}
	var errs []error
	for _, d := range docs {
		id, ok := objectID(d)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: conctl cannot apply a %q document yet", d.Where(), d.Type))
			continue
		}
		if prev, ok := first[id]; ok {
			errs = append(errs, fmt.Errorf("%s: %s is also in %s", d.Where(), id, prev.Where()))
			continue
		}
		first[id] = d
		byType[d.Type] = append(byType[d.Type], d)
	}
	plan := &applyPlan{resources: byType["resource"]}
	for _, t := range document.Types() {
		if t != "resource" {
			plan.oneByOne = append(plan.oneByOne, byType[t]...)
		}
	}
	return plan, errors.Join(errs...)
}

// objectID names the object a document applies, as apply reports it.
func objectID(d *document.Document) (string, bool) {
	switch m := d.Message.(type) {
	case *convergev1.KindManifest:
		return "kind " + kindID(m.GetKind(), m.GetKindVersion()), true
	case *convergev1.ProviderConfig:
		return "providerconfig " + configID(m), true
	case *convergev1.ReactorBinding:
		return "reactorbinding " + m.GetName(), true
	case *convergev1.ApplyResourceRequest:
		return "resource " + m.GetNamespace() + "/" + m.GetKind() + "/" + m.GetName(), true
	}
	return "", false
}

func (a *app) applyBatch(ctx context.Context, docs []*document.Document, start, end int) ([]*applied, error) {
	req := &convergev1.ApplyResourcesRequest{PlanId: a.planID}
	for _, d := range docs[start:end] {
		req.Resources = append(req.Resources, d.Message.(*convergev1.ApplyResourceRequest))
	}
	cctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.ApplyResources(cctx, req)
	if err != nil {
		return nil, batchError(err, docs, start, end)
	}
	if got := len(resp.GetResults()); got != end-start {
		return nil, fmt.Errorf("apply resources %d-%d: the server answered %d results for %d resources", start+1, end, got, end-start)
	}
	recs := make([]*applied, 0, end-start)
	for i, res := range resp.GetResults() {
		in := req.Resources[i]
		rec := &applied{
			Type: "resource", Namespace: or(res.GetNamespace(), in.GetNamespace()), Kind: or(res.GetKind(), in.GetKind()),
			KindVersion: in.GetKindVersion(), Name: or(res.GetName(), in.GetName()),
			UID: res.GetUid(), Generation: res.GetGeneration(), Result: res.GetResult(),
		}
		a.reportLine("resource %s/%s/%s %s", rec.Namespace, rec.Kind, rec.Name, rec.Result)
		recs = append(recs, rec)
	}
	return recs, nil
}

// itemRef finds "resources[N]" in a server message about a batch.
var itemRef = regexp.MustCompile(`resources\[(\d+)\]`)

// batchError says which resources a failed batch held and, when the
// server names an item of it, which document that item came from.
func batchError(err error, docs []*document.Document, start, end int) error {
	msg := message(err)
	outcome := "nothing in this batch was applied"
	if !connect.IsWireError(err) {
		outcome = "the server may or may not have applied this batch"
	}
	what := fmt.Sprintf("apply resources %d-%d of %d (%s)", start+1, end, len(docs), outcome)
	if end-start == 1 {
		what = fmt.Sprintf("%s: apply resource", docs[start].Where())
	} else if m := itemRef.FindStringSubmatch(msg); m != nil {
		if i, convErr := strconv.Atoi(m[1]); convErr == nil && start+i < end {
			msg += fmt.Sprintf(" (resources[%d] is %s)", i, docs[start+i].Where())
		}
	}
	return &contextError{msg: what + ": " + msg, err: err}
}

// reportLine prints one result line in table mode; JSON and YAML output
// report everything at the end instead.
func (a *app) reportLine(format string, args ...any) {
	if a.output == formatTable {
		if a.dryRun {
			format += " (dry run)"
		}
		fmt.Fprintf(a.stdout, format+"\n", args...)
	}
}

func or(s, fallback string) string {
	if s != "" {
		return s
	}
	return fallback
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}
