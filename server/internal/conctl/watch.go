package conctl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

type watchFlags struct {
	kind          string
	name          string
	allNamespaces bool
	cursor        string
}

func (a *app) watchCmd() *cobra.Command {
	var fl watchFlags
	cmd := &cobra.Command{
		Use:   "watch [--kind K [--name N]] [-A] [--cursor C]",
		Short: "Print resource changes as they happen",
		Long: `Watch prints one line per change of a resource in --namespace (or every
namespace with -A) until interrupted:

  TIME TYPE NAMESPACE/KIND/NAME PREVIOUS -> PHASE gen=GENERATION MESSAGE

With -o json it prints one JSON object per change and line; with -o yaml,
one YAML document per change. A broken connection is resumed where it left
off. --cursor resumes from an earlier point (a change's cursor, or the
watch_cursor of a listing) instead of from now.`,
		Example: `  conctl watch
  conctl watch --kind greeting --name hello-world
  conctl watch -A -o json | jq .phase`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.watch(cmd.Context(), fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.kind, "kind", "", "only resources of this kind")
	f.StringVar(&fl.name, "name", "", "only the resource with this name (needs --kind)")
	f.BoolVarP(&fl.allNamespaces, "all-namespaces", "A", false, "watch every namespace")
	f.StringVar(&fl.cursor, "cursor", "", "resume after this cursor instead of starting now")
	return cmd
}

func (a *app) watch(ctx context.Context, fl watchFlags) error {
	if fl.name != "" && fl.kind == "" {
		return usagef("--name needs --kind")
	}
	req := &convergev1.WatchRequest{Namespace: a.namespace, Kind: fl.kind, Name: fl.name, Cursor: fl.cursor}
	if fl.allNamespaces {
		req.Namespace = ""
	}
	err := a.client.Follow(ctx, req, func(resp *convergev1.WatchResponse) error {
		for _, ch := range resp.GetChanges() {
			if err := a.printChange(ch); err != nil {
				return err
			}
		}
		return nil
	})
	if ctx.Err() != nil && (err == nil || errors.Is(err, ctx.Err())) {
		return nil // interrupted: the normal way to stop watching
	}
	if err != nil {
		return wrapf(err, "watch")
	}
	return nil
}

func (a *app) printChange(ch *convergev1.Change) error {
	switch a.output {
	case formatJSON:
		raw, err := protoJSON(ch)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", raw)
		return err
	case formatYAML:
		raw, err := protoJSON(ch)
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, "---")
		return writeYAML(a.stdout, raw)
	}
	t := a.now()
	if ch.GetTime() != nil {
		t = ch.GetTime().AsTime()
	}
	line := fmt.Sprintf("%s %s %s/%s/%s %s -> %s gen=%d",
		t.UTC().Format(time.RFC3339), ch.GetType(), ch.GetNamespace(), ch.GetKind(), ch.GetName(),
		or(ch.GetPreviousPhase(), "-"), or(ch.GetPhase(), "-"), ch.GetGeneration())
	if m := ch.GetMessage(); m != "" {
		line += " " + strings.ReplaceAll(m, "\n", " ")
	}
	_, err := fmt.Fprintln(a.stdout, line)
	return err
}
