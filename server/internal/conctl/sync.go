package conctl

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/server/internal/conctl/document"
)

type syncFlags struct {
	prune  bool
	dryRun bool
	waitFlags
}

// syncCmd is `conctl sync DIR`: GitOps for resources.
func (a *app) syncCmd() *cobra.Command {
	var fl syncFlags
	cmd := &cobra.Command{
		Use:   "sync DIR [--prune] [--dry-run]",
		Short: "Make the server's resources match a directory tree",
		Long: `Sync applies a directory tree of resource documents (.yaml, .yml and .json
files, recursively, in path order) as one app: the resources the tree
declares are created or updated, and with --prune the app's resources the
tree no longer declares are deleted.

DIR, or a directory above it up to the repository's root, holds the app's
marker, converge.yaml:
  app: shop          # required: the app's name
  namespace: shop    # optional: for documents without one (else --namespace)

Every resource sync applies is labelled ` + appLabel + `=<app>; that label is
how the server knows the app's resources. A document may leave the label
out or set it to the app's name, nothing else. A resource already labelled
for another app is never taken over.

Everything is read and checked first: a document that is not a resource,
two documents for the same resource, or a missing marker applies nothing.
Resources are applied the way conctl apply applies them, each printing
created, configured, relabeled or unchanged.

With --prune, every resource labelled for the app that the tree no longer
declares is deleted through the normal deletion (its teardown runs). A
composite's children are not members: their composite decides their life.
A resource labelled ` + pruneLabel + `=false on the server is kept
and reported as kept. --prune needs DIR to be the marker's directory, so
that the whole app is declared.

With --dry-run, sync prints what it would do (create, update with what
changes, unchanged, delete, keep) and changes nothing.`,
		Example: `  # See what would change, then do it
  conctl sync deploy/shop --prune --dry-run
  conctl sync deploy/shop --prune

  # Apply and wait until every resource is Ready or Failed
  conctl sync deploy/shop --wait

  # The plan as JSON, for a CI comment
  conctl sync deploy/shop --prune --dry-run -o json`,
		Args: exactArgs(1, "DIR, the directory of an app's tree"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.sync(cmd.Context(), args[0], fl)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&fl.prune, "prune", false, "delete the app's resources that the tree no longer declares")
	f.BoolVar(&fl.dryRun, "dry-run", false, "print what sync would do and change nothing")
	fl.register(cmd, "wait until every applied resource is Ready or Failed and every pruned one is gone")
	return cmd
}

// syncReport is sync's -o json/yaml output.
type syncReport struct {
	App       string      `json:"app"`
	Marker    string      `json:"marker"`
	DryRun    bool        `json:"dry_run"`
	Prune     bool        `json:"prune"`
	Resources []*syncItem `json:"resources"`
	// Undeclared counts the app's resources the tree no longer declares,
	// which --prune would delete; set without --prune.
	Undeclared int `json:"undeclared,omitempty"`
}

func (a *app) sync(ctx context.Context, dir string, fl syncFlags) error {
	if err := fl.check(a.stderr); err != nil {
		return err
	}
	if fl.wait && fl.dryRun {
		return usagef("--wait: nothing to wait for with --dry-run")
	}
	sc, docs, err := a.readTree(dir, fl.prune)
	if err != nil {
		return err
	}
	items, undeclared, err := a.planSync(ctx, sc, docs, fl.prune)
	if err != nil {
		return err
	}
	rep := &syncReport{App: sc.app, Marker: sc.markerPath, DryRun: fl.dryRun, Prune: fl.prune, Resources: items, Undeclared: undeclared}
	if fl.dryRun {
		a.printPlan(rep)
		return a.printSyncReport(rep)
	}
	err = a.runSync(ctx, sc, docs, rep, fl)
	if perr := a.printSyncReport(rep); perr != nil && err == nil {
		err = perr
	}
	return err
}

// readTree finds the app's marker and reads and checks every document of
// the tree; any problem anywhere is an error and nothing is applied.
func (a *app) readTree(dir string, prune bool) (*appScope, []*document.Document, error) {
	sc, err := findAppScope(dir)
	if err != nil {
		return nil, nil, err
	}
	if prune {
		if abs, err := filepath.Abs(dir); err != nil || abs != sc.root {
			return nil, nil, usagef("--prune: %s is below the root of app %q (%s): pruning from part of the tree would "+
				"delete the rest of the app; sync the marker's directory", dir, sc.app, sc.markerPath)
		}
	}
	files, err := syncFiles(dir, sc)
	if err != nil {
		return nil, nil, err
	}
	ns := a.namespace
	if sc.namespace != "" {
		ns = sc.namespace
	}
	var docs []*document.Document
	if len(files) > 0 {
		docs, err = document.Read(files, nil, document.WithDefaultNamespace(ns))
		if err != nil {
			return nil, nil, err
		}
	}
	docs, err = syncDocuments(docs, sc)
	if err != nil {
		return nil, nil, err
	}
	return sc, docs, nil
}

// runSync applies the declared resources through apply's path, prunes,
// and waits when asked.
func (a *app) runSync(ctx context.Context, sc *appScope, docs []*document.Document, rep *syncReport, fl syncFlags) error {
	var applied []*applied
	if len(docs) > 0 {
		if err := a.applyAll(ctx, &applyPlan{resources: docs}, applyFlags{}, &applied); err != nil {
			return err
		}
	}
	for i, rec := range applied {
		it := rep.Resources[i]
		it.Result, it.UID, it.Generation = rec.Result, rec.UID, rec.Generation
	}
	var pruned []*syncItem
	if fl.prune {
		var err error
		if pruned, err = a.prune(ctx, sc, docs); err != nil {
			return err
		}
		// The listing after applying is the truth about what was pruned.
		rep.Resources = append(rep.Resources[:len(docs)], pruned...)
	}
	a.printSummary(rep)
	if !fl.wait {
		return nil
	}
	deadline := time.Now().Add(fl.timeout)
	var errs []error
	if len(applied) > 0 {
		if err := a.waitApplied(ctx, applied, fl.timeout); err != nil {
			errs = append(errs, err)
		}
		for i, rec := range applied {
			rep.Resources[i].Phase, rep.Resources[i].Message = rec.Phase, rec.Message
		}
	}
	if err := a.waitPruned(ctx, pruned, time.Until(deadline)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
