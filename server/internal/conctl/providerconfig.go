package conctl

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// providerConfigAliases are the names of the provider config type.
var providerConfigAliases = []string{"providerconfig", "providerconfigs", "pc"}

// configRef names provider configs on the command line:
// KIND[/VERSION[/NAME]], e.g. greeting/v1/default.
type configRef struct {
	kind    string
	version int32
	name    string
}

func (r configRef) String() string {
	s := r.kind
	if r.version > 0 {
		s = kindID(r.kind, r.version)
	}
	if r.name != "" {
		s += "/" + r.name
	}
	return s
}

// configID names a provider config the way it is typed: greeting/v1/default.
func configID(c *convergev1.ProviderConfig) string {
	return configRef{kind: c.GetKind(), version: c.GetKindVersion(), name: c.GetName()}.String()
}

func parseConfigRef(arg string) (configRef, error) {
	parts := strings.Split(arg, "/")
	bad := usagef("provider config %q: want KIND/VERSION/NAME, e.g. greeting/v1/default", arg)
	if len(parts) > 3 || parts[0] == "" {
		return configRef{}, bad
	}
	ref := configRef{kind: parts[0]}
	if len(parts) > 1 {
		v, err := strconv.ParseInt(strings.TrimPrefix(parts[1], "v"), 10, 32)
		if err != nil || v < 1 {
			return configRef{}, usagef("provider config %q: the version must be a positive integer, e.g. greeting/v1/default", arg)
		}
		ref.version = int32(v)
	}
	if len(parts) == 3 {
		if parts[2] == "" {
			return configRef{}, bad
		}
		ref.name = parts[2]
	}
	return ref, nil
}

func (a *app) getProviderConfigCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "providerconfig KIND/VERSION[/NAME]",
		Aliases: providerConfigAliases[1:],
		Short:   "Show a provider config, or every config of a kind version",
		Long: `Show a provider config: KIND/VERSION/NAME shows that one (the config every
resource of the version uses is named "default"), KIND/VERSION every config
of that version, KIND every config of the kind. The table lists the
config's top-level keys; -o yaml or -o json shows the whole config.`,
		Example: `  conctl get providerconfig greeting/v1/default -o yaml
  conctl get pc greeting/v1
  conctl get pc greeting`,
		Args: exactArgs(1, "KIND/VERSION/NAME, e.g. greeting/v1/default"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseConfigRef(args[0])
			if err != nil {
				return err
			}
			return a.getProviderConfig(cmd.Context(), ref)
		},
	}
}

func (a *app) getProviderConfig(ctx context.Context, ref configRef) error {
	ctx, cancel := a.call(ctx)
	defer cancel()
	if ref.name != "" {
		resp, err := a.client.GetProviderConfig(ctx, &convergev1.GetProviderConfigRequest{Kind: ref.kind, KindVersion: ref.version, Name: ref.name})
		if err != nil {
			return wrapf(err, "get providerconfig %s", ref)
		}
		return a.printProviderConfigs([]*convergev1.ProviderConfig{resp.GetConfig()}, true)
	}
	resp, err := a.client.ListProviderConfigs(ctx, &convergev1.ListProviderConfigsRequest{Kind: ref.kind, KindVersion: ref.version})
	if err != nil {
		return wrapf(err, "get providerconfig %s", ref)
	}
	var cs []*convergev1.ProviderConfig
	for _, c := range resp.GetConfigs() {
		if c.GetKind() == ref.kind && (ref.version == 0 || c.GetKindVersion() == ref.version) {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return connect.NewError(connect.CodeNotFound, fmt.Errorf("no provider configs of %s (list them with: conctl list providerconfigs)", ref))
	}
	return a.printProviderConfigs(sortConfigs(cs), false)
}

func (a *app) listProviderConfigsCmd() *cobra.Command {
	var kind string
	var version int32
	cmd := &cobra.Command{
		Use:     "providerconfigs",
		Aliases: []string{"providerconfig", "pc"},
		Short:   "List provider configs",
		Long: `List the provider configs of every kind version, or of one kind (--kind)
or kind version (--kind and --kind-version). "default" is the config every
resource of its version uses; a resource may name another on top of it.`,
		Example: `  conctl list providerconfigs
  conctl list pc --kind greeting --kind-version 1 -o yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if version < 0 || (version > 0 && kind == "") {
				return usagef("--kind-version: needs --kind and a positive version")
			}
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			resp, err := a.client.ListProviderConfigs(ctx, &convergev1.ListProviderConfigsRequest{Kind: kind, KindVersion: version})
			if err != nil {
				return wrapf(err, "list providerconfigs")
			}
			cs := sortConfigs(resp.GetConfigs())
			if len(cs) == 0 && a.output == formatTable {
				fmt.Fprintln(a.stderr, "No provider configs found.")
				return nil
			}
			return a.printProviderConfigs(cs, false)
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "only configs of this kind")
	cmd.Flags().Int32Var(&version, "kind-version", 0, "only configs of this kind version (needs --kind)")
	return cmd
}

func (a *app) deleteProviderConfigCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "providerconfig KIND/VERSION/NAME",
		Aliases: providerConfigAliases[1:],
		Short:   "Delete a provider config",
		Long:    `Delete a provider config. The server refuses while resources use it.`,
		Example: `  conctl delete providerconfig greeting/v1/eu
  conctl delete pc greeting/v1/default`,
		Args: exactArgs(1, "KIND/VERSION/NAME, e.g. greeting/v1/eu"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseConfigRef(args[0])
			if err != nil {
				return err
			}
			if ref.name == "" {
				return usagef("delete providerconfig needs KIND/VERSION/NAME, e.g. %s/v1/default: configs are deleted one at a time", ref.kind)
			}
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			_, err = a.client.DeleteProviderConfig(ctx, &convergev1.DeleteProviderConfigRequest{Kind: ref.kind, KindVersion: ref.version, Name: ref.name})
			if err != nil {
				return wrapf(err, "delete providerconfig %s", ref)
			}
			fmt.Fprintf(a.stdout, "providerconfig %s deleted%s\n", ref, a.dryRunMark())
			return nil
		},
	}
}

// sortConfigs orders provider configs by kind, version and name, the
// default first.
func sortConfigs(cs []*convergev1.ProviderConfig) []*convergev1.ProviderConfig {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		switch {
		case a.GetKind() != b.GetKind():
			return a.GetKind() < b.GetKind()
		case a.GetKindVersion() != b.GetKindVersion():
			return a.GetKindVersion() < b.GetKindVersion()
		case (a.GetName() == "default") != (b.GetName() == "default"):
			return a.GetName() == "default"
		}
		return a.GetName() < b.GetName()
	})
	return cs
}

// maxKeysWidth keeps the KEYS column short.
const maxKeysWidth = 40

// printProviderConfigs prints configs as a table, or as JSON/YAML.
func (a *app) printProviderConfigs(cs []*convergev1.ProviderConfig, single bool) error {
	if a.machine() {
		msgs := make([]proto.Message, len(cs))
		for i, c := range cs {
			msgs[i] = c
		}
		return a.printMessages(msgs, single)
	}
	t := newTable(a.stdout, "KIND", "VERSION", "NAME", "KEYS", "REVISION", "AGE", "DESCRIPTION")
	now := a.now()
	for _, c := range cs {
		keys := make([]string, 0, len(c.GetConfig().GetFields()))
		for k := range c.GetConfig().GetFields() {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		desc, _, _ := strings.Cut(c.GetDescription(), "\n")
		t.row(c.GetKind(), version(c.GetKindVersion()), c.GetName(), truncate(strings.Join(keys, ","), maxKeysWidth),
			strconv.FormatInt(c.GetRevision(), 10), age(now, c.GetCreatedAt()), truncate(desc, maxMessageWidth))
	}
	return t.flush()
}
