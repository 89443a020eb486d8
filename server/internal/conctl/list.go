package conctl

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// maxPageSize is the largest page the server hands out.
const maxPageSize = 1000

func (a *app) listCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list (kinds | resources | providerconfigs | reactorbindings)",
		Short: "List kinds, resources, provider configs or reactor bindings",
		Long: `List kinds; resources filtered by kind, phase and labels; provider configs
(pc); or reactor bindings (rb).`,
		Example: `  conctl list kinds
  conctl list resources --kind greeting
  conctl list resources --phase Failed --phase Degraded -A
  conctl list pc --kind greeting
  conctl list rb`,
		Args: cobra.ArbitraryArgs,
		RunE: typeArgs,
	}
	cmd.AddCommand(a.listKindsCmd(), a.listResourcesCmd(), a.listProviderConfigsCmd(), a.listReactorBindingsCmd())
	return cmd
}

func (a *app) listKindsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "kinds",
		Aliases: []string{"kind", "manifest", "manifests"},
		Short:   "List every version of every kind",
		Long:    `List every kind version the server knows, with its owner, reactions and whether it is retired.`,
		Example: `  conctl list kinds
  conctl list kinds -o yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			resp, err := a.client.ListKinds(ctx, &convergev1.ListKindsRequest{})
			if err != nil {
				return wrapf(err, "list kinds")
			}
			ms := sortKinds(resp.GetManifests())
			if len(ms) == 0 && a.output == formatTable {
				fmt.Fprintln(a.stderr, "No kinds found.")
				return nil
			}
			return a.printKinds(ms, false)
		},
	}
}

type listFlags struct {
	kind          string
	kindVersion   int32
	phases        []string
	selector      string
	allNamespaces bool
	limit         int
}

func (a *app) listResourcesCmd() *cobra.Command {
	var fl listFlags
	cmd := &cobra.Command{
		Use:     "resources",
		Aliases: []string{"resource", "res"},
		Short:   "List resources",
		Long: `List resources of --namespace (or of all namespaces with -A), optionally
only those of a kind, in some phases, or matching a label selector. -o wide
adds an OWNER column: the composite each child belongs to.

A label selector is a comma-separated list of terms that must all hold:
key=value, key!=value, key (has the label) or !key (has not).

Listing stops after --limit resources; conctl follows the server's pages
up to that point.`,
		Example: `  conctl list resources
  conctl list resources --kind greeting --kind-version 2
  conctl list res --phase failed --phase degraded -A
  conctl list resources -l team=web,tier!=canary --limit 2000 -o json
  conctl list resources --kind vpc -o wide`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.listResources(cmd.Context(), fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.kind, "kind", "", "only resources of this kind")
	f.Int32Var(&fl.kindVersion, "kind-version", 0, "only resources at this kind version (needs --kind)")
	f.StringArrayVar(&fl.phases, "phase", nil, "only resources in this phase; repeatable ("+strings.Join(client.Phases(), ", ")+")")
	f.StringVarP(&fl.selector, "selector", "l", "", "label selector, e.g. team=web,tier!=canary")
	f.BoolVarP(&fl.allNamespaces, "all-namespaces", "A", false, "list in every namespace")
	f.IntVar(&fl.limit, "limit", 500, "stop after this many resources (0: no limit)")
	return withFormats(cmd, formatTable, formatWide, formatJSON, formatYAML)
}

func (a *app) listResources(ctx context.Context, fl listFlags) error {
	if fl.limit < 0 {
		return usagef("--limit: %d is negative", fl.limit)
	}
	if fl.kindVersion < 0 || (fl.kindVersion > 0 && fl.kind == "") {
		return usagef("--kind-version: needs --kind and a positive version")
	}
	phases, err := normalizePhases(fl.phases)
	if err != nil {
		return err
	}
	req := &convergev1.ListResourcesRequest{
		Namespace: a.namespace, Kind: fl.kind, KindVersion: fl.kindVersion, Phases: phases,
		LabelSelector: fl.selector, Summary: !a.machine(),
	}
	if fl.allNamespaces {
		req.Namespace = ""
	}
	var all []*convergev1.Resource
	more := false
	for {
		want := maxPageSize
		if fl.limit > 0 {
			want = min(fl.limit-len(all), maxPageSize)
		}
		req.PageSize = int32(want)
		cctx, cancel := a.call(ctx)
		resp, err := a.client.ListResources(cctx, req)
		cancel()
		if err != nil {
			return wrapf(err, "list resources")
		}
		page := resp.GetResources()
		if fl.limit > 0 && len(all)+len(page) > fl.limit {
			page = page[:fl.limit-len(all)]
		}
		all = append(all, page...)
		if resp.GetNextPageToken() == "" {
			break
		}
		if fl.limit > 0 && len(all) >= fl.limit {
			more = true
			break
		}
		if resp.GetNextPageToken() == req.PageToken {
			return fmt.Errorf("list resources: the server returned page token %q twice", req.PageToken)
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if !a.machine() {
		if len(all) == 0 {
			where := "in namespace " + a.namespace
			if fl.allNamespaces {
				where = "in any namespace"
			}
			fmt.Fprintf(a.stderr, "No resources found %s.\n", where)
			return nil
		}
		if more {
			defer fmt.Fprintf(a.stderr, "Showing the first %d; there are more (raise --limit or narrow the filters).\n", fl.limit)
		}
	}
	return a.printResources(all, false)
}

// sortKinds orders manifests by kind, then version.
func sortKinds(ms []*convergev1.KindManifest) []*convergev1.KindManifest {
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].GetKind() != ms[j].GetKind() {
			return ms[i].GetKind() < ms[j].GetKind()
		}
		return ms[i].GetKindVersion() < ms[j].GetKindVersion()
	})
	return ms
}

// normalizePhases accepts phases in any letter case and refuses unknown ones.
func normalizePhases(in []string) ([]string, error) {
	var out []string
	for _, arg := range in {
		for _, p := range strings.Split(arg, ",") {
			found := ""
			for _, known := range client.Phases() {
				if strings.EqualFold(strings.TrimSpace(p), known) {
					found = known
				}
			}
			if found == "" {
				return nil, usagef("--phase: %q is not one of %s", p, strings.Join(client.Phases(), ", "))
			}
			out = append(out, found)
		}
	}
	return out, nil
}
