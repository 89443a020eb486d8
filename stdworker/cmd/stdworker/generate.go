package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/stdworker/stdterraform/tfgen"
)

// generateFlags are kinds generate's flags.
type generateFlags struct {
	provider, schema, out, owner string
	terraform, mirror            string
	forbidReplace, dataSources   bool
	resync                       int
}

func generateCmd() *cobra.Command {
	var g generateFlags
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Write a kind manifest per resource type of a Terraform provider into a catalog team directory",
		Long: `Write one kind manifest per resource type of a Terraform provider into a catalog team
directory, for stdworker's stdterraform provider to serve with no module written by hand.
The schema comes from --schema (the output of "terraform providers schema -json") or, without
it, from running "terraform init" and "terraform providers schema -json" in a scratch directory
that requires the provider (--mirror: from a filesystem mirror only).

Kinds are named tf.<provider>.<type without the provider's prefix, '_' as '-'>: time_static
of hashicorp/time is tf.time.static. spec_schema holds the type's arguments (sensitive ones
marked writeOnly) and import_id, status_schema its computed attributes, config_schema the
provider's configuration block as "provider". A kind already in the directory is compared with
its newest version by the server's stability checker: a compatible change edits that version
in place, a breaking one becomes the next version. A resource type that cannot be mapped is
skipped, naming the attribute and why; the others are written.`,
		Example: `  stdworker kinds generate --provider hashicorp/time@0.14.2 --out catalog/tf-time --owner tf-time
  stdworker kinds generate --provider hashicorp/time@0.14.2 --schema schema.json --out catalog/tf-time --owner tf-time
  stdworker kinds generate --provider hashicorp/time@0.14.2 --mirror ~/.cache/converge/tf-mirror --out catalog/tf-time --owner tf-time`,
		Args: subcommandsOnly,
		RunE: func(cmd *cobra.Command, _ []string) error { return g.run(cmd) },
	}
	fl := cmd.Flags()
	fl.StringVar(&g.provider, "provider", "", "the provider, SOURCE@VERSION (e.g. hashicorp/time@0.14.2); required")
	fl.StringVar(&g.schema, "schema", "", "read the schema from this file (terraform providers schema -json) instead of running terraform")
	fl.StringVar(&g.out, "out", "", "the catalog team directory to write into, e.g. catalog/tf-time; required")
	fl.StringVar(&g.owner, "owner", "", "the team that owns the kinds: the --out directory's name; required")
	// The default is resolved when the command runs: one taken from this
	// machine's environment would show in --help and the reference.
	fl.StringVar(&g.terraform, "terraform", "", "the terraform or tofu binary that reads the schema (default: env TERRAFORM_BINARY, else terraform)")
	fl.StringVar(&g.mirror, "mirror", "", "install the provider from this filesystem mirror only (default: as terraform's CLI configuration says)")
	fl.BoolVar(&g.forbidReplace, "forbid-replace", false, "make the kinds refuse a plan that would replace (destroy and re-create) an object")
	fl.IntVar(&g.resync, "resync-interval", 3600, "the kinds' resync interval in seconds: how often drift is looked for (0: never)")
	fl.BoolVar(&g.dataSources, "data-sources", false, "also generate kinds from data sources (not available yet)")
	return cmd
}

func (g generateFlags) run(cmd *cobra.Command) error {
	source, version, ok := strings.Cut(g.provider, "@")
	switch {
	case g.provider == "":
		return usageError{errors.New("--provider: required, SOURCE@VERSION")}
	case !ok || source == "" || version == "":
		return usageError{fmt.Errorf("--provider: %q must be SOURCE@VERSION, e.g. hashicorp/time@0.14.2", g.provider)}
	case g.out == "":
		return usageError{errors.New("--out: required, the catalog team directory")}
	case g.owner == "":
		return usageError{errors.New("--owner: required, the team that owns the kinds")}
	case g.dataSources:
		return errors.New("--data-sources: kinds from data sources are not generated yet; generate resource types only (an existing object of one is adopted read-only with management_policy observe and import.id)")
	case g.resync < 0:
		return usageError{fmt.Errorf("--resync-interval: %d must be 0 or more seconds", g.resync)}
	}
	version = strings.TrimPrefix(version, "v")
	var raw []byte
	var err error
	if g.schema != "" {
		raw, err = os.ReadFile(g.schema)
		if err != nil {
			return fmt.Errorf("--schema: %w", err)
		}
	} else {
		bin := cmp.Or(g.terraform, os.Getenv("TERRAFORM_BINARY"), "terraform")
		raw, err = tfgen.Fetch{Binary: bin, Mirror: g.mirror}.FetchSchema(cmd.Context(), source, version)
		if err != nil {
			return fmt.Errorf("reading the schema of %s %s: %w", source, version, err)
		}
	}
	s, err := tfgen.ParseSchemas(raw)
	if err != nil {
		return err
	}
	opts := tfgen.Options{Source: source, Version: version, Owner: g.owner, ForbidReplace: g.forbidReplace, ResyncSeconds: g.resync}
	kinds, skipped, err := tfgen.Generate(s, opts)
	if err != nil {
		return err
	}
	outcomes, err := tfgen.Write(g.out, g.owner, kinds, "stdworker kinds generate --provider "+source+"@"+version)
	w := cmd.OutOrStdout()
	for _, o := range outcomes {
		fmt.Fprintln(w, o)
	}
	for _, sk := range skipped {
		fmt.Fprintf(cmd.ErrOrStderr(), "skipped resource type %s: %s\n", sk.Type, sk.Why)
	}
	if err != nil {
		return err
	}
	if len(kinds) == 0 {
		return fmt.Errorf("%s %s: no resource type could be generated", source, version)
	}
	return nil
}
