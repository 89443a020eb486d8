package conctl

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/catalog"
	"github.com/convergehq/converge/server/internal/conctl/document"
)

func (a *app) catalogPublishCmd() *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "publish [DIR] [--dry-run]",
		Short: "Apply a kind catalog to the server",
		Long: `Publish checks the catalog in DIR (default "catalog") like "conctl catalog
check" (without --base) and refuses a catalog with problems. It then applies
it, idempotently: the manifests, then the std.graph resources that define
kinds (stdworker applies the kinds they define), then provider configs, then
reactor bindings. Examples are not applied. Each object prints one line
with the server's result: created, configured or unchanged.

--dry-run lists what it would apply without contacting the server.`,
		Example: `  # What would be applied?
  conctl catalog publish --dry-run

  # Apply it
  conctl catalog publish catalog --server https://converge.example.com`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := catalogDir(cmd, args)
			if err != nil {
				return err
			}
			return a.catalogPublish(cmd.Context(), dir, dryRun)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be applied; apply nothing")
	return cmd
}

func (a *app) catalogPublish(ctx context.Context, dir string, dryRun bool) error {
	c, err := a.loadCatalog(dir)
	if err != nil {
		return err
	}
	if ps := c.Check(ctx, nil); len(ps) > 0 {
		if err := a.printProblems(ps); err != nil {
			return err
		}
		return fmt.Errorf("not published: the catalog has %s (see conctl catalog check)", problemSummary(ps))
	}
	first, then := publishPlans(c)
	if dryRun {
		return a.printDryRun(append(append(append(first.oneByOne, first.resources...), then.oneByOne...), then.resources...))
	}
	var report []*applied
	err = a.applyAll(ctx, first, applyFlags{}, &report)
	if err == nil {
		err = a.applyAll(ctx, then, applyFlags{}, &report)
	}
	if a.output != formatTable && len(report) > 0 {
		if perr := a.printValue(report); perr != nil && err == nil {
			err = perr
		}
	}
	return err
}

// publishPlans orders a catalog for apply: manifests, then std.graph
// resources (which define kinds through stdworker); then provider configs
// and reactor bindings, which may be of those kinds.
func publishPlans(c *catalog.Catalog) (first, then *applyPlan) {
	first, then = &applyPlan{}, &applyPlan{}
	for _, k := range c.Kinds() {
		for _, v := range k.Versions {
			for _, d := range v.Docs {
				if d.Manifest() != nil {
					first.oneByOne = append(first.oneByOne, catalogDocument(d))
				} else {
					first.resources = append(first.resources, catalogDocument(d))
				}
			}
		}
	}
	for _, k := range c.Kinds() {
		for _, d := range k.Configs {
			then.oneByOne = append(then.oneByOne, catalogDocument(d))
		}
	}
	for _, k := range c.Kinds() {
		for _, d := range k.Bindings {
			then.oneByOne = append(then.oneByOne, catalogDocument(d))
		}
	}
	return first, then
}

// catalogDocument is a catalog document as apply takes it.
func catalogDocument(d *catalog.Doc) *document.Document {
	return &document.Document{Source: d.File, Line: d.Line, Type: d.Type, Message: d.Message}
}

// printDryRun lists what publish would apply.
func (a *app) printDryRun(docs []*document.Document) error {
	var report []*applied
	for _, d := range docs {
		id, _ := objectID(d)
		a.reportLine("%s (dry run)", id)
		report = append(report, planned(d))
	}
	if a.output != formatTable {
		return a.printValue(report)
	}
	return nil
}

// planned is the report line of a document publish would apply.
func planned(d *document.Document) *applied {
	rec := &applied{Type: d.Type, Result: "dry run"}
	switch m := d.Message.(type) {
	case *convergev1.KindManifest:
		rec.Type, rec.Kind, rec.KindVersion = "kind", m.GetKind(), m.GetKindVersion()
	case *convergev1.ProviderConfig:
		rec.Kind, rec.KindVersion, rec.Name = m.GetKind(), m.GetKindVersion(), m.GetName()
	case *convergev1.ReactorBinding:
		rec.Name = m.GetName()
	case *convergev1.ApplyResourceRequest:
		rec.Namespace, rec.Kind, rec.KindVersion, rec.Name = m.GetNamespace(), m.GetKind(), m.GetKindVersion(), m.GetName()
	}
	return rec
}
