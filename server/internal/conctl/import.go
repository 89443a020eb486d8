package conctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/importfile"
)

type importFlags struct {
	policy      string
	kindVersion int32
	timeout     time.Duration
	noWait      bool
}

func (a *app) importCmd() *cobra.Command {
	var fl importFlags
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Adopt existing external objects: create a resource importing each, and wait until each is adopted",
		Long: `Import brings existing external objects under Converge: for each row of
FILE (kind, name, external id) it creates the resource kind/name with
import.id set to the id, so that its first reconcile adopts the object
instead of creating one, and then shows progress until each resource is
adopted (Ready) or failed, with a summary. It exits 1 if any failed.

FILE (or - for standard input) is CSV with a header row, or JSON Lines
(one object per line), with these fields:

  kind          required: the resource's kind
  name          required: the resource's name
  id            required: the external object's id, as the kind's handler
                knows it (a cloud ID, an ARN, a Terraform import ID)
  namespace     the resource's namespace (empty: --namespace)
  kind_version  the kind version (empty: --kind-version, else the kind's
                newest version that is not retired)
  policy        full or observe (empty: --policy)
  spec          the resource's spec, a JSON object (empty: {})

A name ending in .csv is CSV, .jsonl, .ndjson or .json JSON Lines;
otherwise a file starting with '{' is JSON Lines and anything else CSV.
Every problem in the file is reported, naming the row's line and the
field, before anything is applied.

--policy observe (the default) adopts each object read-only: the kind's
observe reaction reports what exists, and nothing is created, changed or
deleted, not even when the resource is deleted. Promote a resource to full
management with "conctl manage KIND/NAME full" once its status looks right.

Resources are applied in transactions of up to 1,000, each all or nothing;
a row naming a resource that exists already updates it (import id and
policy included).`,
		Example: `  # vpcs.csv:
  #   kind,name,id
  #   net.vpc,prod-main,vpc-0a1b2c3d
  #   net.vpc,prod-edge,vpc-0e4f5a6b
  conctl import vpcs.csv

  # Manage them in full at once, in team-a
  conctl import vpcs.csv --policy full -n team-a

  # JSON Lines from another tool
  inventory --json | conctl import - --timeout 30m`,
		Args: exactArgs(1, "FILE, or - for standard input"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runImport(cmd.Context(), args[0], fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.policy, "policy", "observe", "management policy of rows that name none: observe or full")
	f.Int32Var(&fl.kindVersion, "kind-version", 0, "kind version of rows that name none (0: the kind's newest that is not retired)")
	f.BoolVar(&fl.noWait, "no-wait", false, "apply and return without waiting for the resources to be adopted")
	f.DurationVar(&fl.timeout, "timeout", defaultWaitTimeout, "how long to wait in all for the resources to be adopted")
	return cmd
}

func (a *app) readImportFile(path string) (string, []byte, error) {
	if path == "-" {
		data, err := io.ReadAll(io.LimitReader(a.stdin, importfile.MaxSize+1))
		return "stdin", data, err
	}
	data, err := os.ReadFile(path)
	return path, data, err
}

func (a *app) runImport(ctx context.Context, path string, fl importFlags) error {
	if fl.policy != "observe" && fl.policy != "full" {
		return usagef("--policy: %q is not one of observe, full", fl.policy)
	}
	if fl.kindVersion < 0 {
		return usagef("--kind-version: %d is not a version", fl.kindVersion)
	}
	if fl.timeout <= 0 {
		return usagef("--timeout: %s is not positive", fl.timeout)
	}
	source, data, err := a.readImportFile(path)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	rows, err := importfile.Parse(source, data)
	if err != nil {
		return err
	}
	reqs, err := a.importRequests(ctx, source, rows, fl)
	if err != nil {
		return err
	}
	start := time.Now()
	var recs []*applied
	for i := 0; i < len(reqs); i += maxBatch {
		end := min(i+maxBatch, len(reqs))
		got, err := a.importBatch(ctx, source, rows, reqs, i, end)
		if err != nil {
			return err
		}
		recs = append(recs, got...)
		fmt.Fprintf(a.progressOut(), "applied %d/%d\n", end, len(reqs))
	}
	if fl.noWait {
		return nil
	}
	err = a.waitApplied(ctx, recs, fl.timeout)
	ready, failed := 0, 0
	for _, r := range recs {
		switch r.Phase {
		case "Ready":
			ready++
		case "Failed":
			failed++
		}
	}
	fmt.Fprintf(a.progressOut(), "import: %d rows in %s: %d adopted (Ready), %d failed, %d not settled\n",
		len(recs), time.Since(start).Round(time.Millisecond), ready, failed, len(recs)-ready-failed)
	return err
}

// progressOut is where progress goes: standard output for tables, else
// standard error, so -o json stays machine-readable.
func (a *app) progressOut() io.Writer {
	if a.output == formatTable {
		return a.stdout
	}
	return a.stderr
}

// importRequests turns rows into apply requests, picking each kind's
// version when the row and --kind-version leave it open.
func (a *app) importRequests(ctx context.Context, source string, rows []importfile.Row, fl importFlags) ([]*convergev1.ApplyResourceRequest, error) {
	latest := map[string]int32{}
	reqs := make([]*convergev1.ApplyResourceRequest, len(rows))
	for i, r := range rows {
		where := fmt.Sprintf("%s: row at line %d", source, r.Line)
		version := r.KindVersion
		if version == 0 {
			version = fl.kindVersion
		}
		if version == 0 {
			v, seen := latest[r.Kind]
			if !seen {
				var err error
				if v, err = a.newestVersion(ctx, r.Kind); err != nil {
					return nil, fmt.Errorf("%s: kind: %w", where, err)
				}
				latest[r.Kind] = v
			}
			version = v
		}
		req := &convergev1.ApplyResourceRequest{
			Namespace: or(r.Namespace, a.namespace), Kind: r.Kind, KindVersion: version, Name: r.Name,
			ManagementPolicy: or(r.Policy, fl.policy), Import: &convergev1.ResourceImport{Id: r.ID},
		}
		if len(r.Spec) > 0 {
			var spec map[string]any
			if err := json.Unmarshal(r.Spec, &spec); err != nil {
				return nil, fmt.Errorf("%s: spec: %v", where, err)
			}
			s, err := structpb.NewStruct(spec)
			if err != nil {
				return nil, fmt.Errorf("%s: spec: %v", where, err)
			}
			req.Spec = s
		}
		reqs[i] = req
	}
	return reqs, nil
}

// newestVersion is a kind's newest version that is not retired.
func (a *app) newestVersion(ctx context.Context, kind string) (int32, error) {
	cctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.ListKinds(cctx, &convergev1.ListKindsRequest{Kind: kind})
	if err != nil {
		return 0, wrapf(err, "list versions of kind %s", kind)
	}
	var best int32
	for _, m := range resp.GetManifests() {
		if !m.GetPolicy().GetRetired() && m.GetKindVersion() > best {
			best = m.GetKindVersion()
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("%q has no version that accepts new resources; apply its manifest first, or give kind_version", kind)
	}
	return best, nil
}

func (a *app) importBatch(ctx context.Context, source string, rows []importfile.Row, reqs []*convergev1.ApplyResourceRequest, start, end int) ([]*applied, error) {
	req := &convergev1.ApplyResourcesRequest{Resources: reqs[start:end]}
	cctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.ApplyResources(cctx, req)
	if err != nil {
		what := fmt.Sprintf("import rows %d-%d of %d (nothing in this batch was applied)", start+1, end, len(rows))
		if m := itemRef.FindStringSubmatch(message(err)); m != nil {
			var n int
			if _, serr := fmt.Sscan(m[1], &n); serr == nil && start+n < end {
				what = fmt.Sprintf("%s: row at line %d (%s)", source, rows[start+n].Line, what)
			}
		}
		return nil, wrapf(err, "%s", what)
	}
	if got := len(resp.GetResults()); got != end-start {
		return nil, fmt.Errorf("import rows %d-%d: the server answered %d results for %d resources", start+1, end, got, end-start)
	}
	recs := make([]*applied, 0, end-start)
	for i, res := range resp.GetResults() {
		in := req.Resources[i]
		recs = append(recs, &applied{
			Type: "resource", Namespace: or(res.GetNamespace(), in.GetNamespace()), Kind: or(res.GetKind(), in.GetKind()),
			KindVersion: in.GetKindVersion(), Name: or(res.GetName(), in.GetName()),
			UID: res.GetUid(), Generation: res.GetGeneration(), Result: res.GetResult(),
		})
	}
	return recs, nil
}
