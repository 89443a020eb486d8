package conctl

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

type eventsFlags struct {
	allNamespaces bool
	limit         int
}

func (a *app) eventsCmd() *cobra.Command {
	var fl eventsFlags
	cmd := &cobra.Command{
		Use:   "events [KIND/NAME]",
		Short: "Show recent events, of one resource or of a namespace",
		Long: `Events shows what happened recently and who did it: the events of one
resource (KIND/NAME), or of every resource in --namespace (or in every
namespace with -A). The most recent --limit events are shown, oldest first.`,
		Example: `  conctl events
  conctl events greeting/hello-world
  conctl events -A --limit 200 -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("%s takes at most one KIND/NAME", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.events(cmd.Context(), args, fl)
		},
	}
	cmd.Flags().BoolVarP(&fl.allNamespaces, "all-namespaces", "A", false, "events of every namespace")
	cmd.Flags().IntVar(&fl.limit, "limit", 50, "how many recent events to show")
	return cmd
}

func (a *app) events(ctx context.Context, args []string, fl eventsFlags) error {
	if fl.limit <= 0 {
		return usagef("--limit: %d is not positive", fl.limit)
	}
	req := &convergev1.ListEventsRequest{Namespace: a.namespace}
	if fl.allNamespaces {
		req.Namespace = ""
	}
	one := len(args) == 1
	if one {
		if fl.allNamespaces {
			return usagef("-A lists every namespace; it cannot go with a KIND/NAME")
		}
		ref, err := parseResourceRef(args[0], a.namespace)
		if err != nil {
			return err
		}
		req.Kind, req.Name = ref.kind, ref.name
	}
	var events []*convergev1.Event
	for len(events) < fl.limit {
		req.PageSize = int32(min(fl.limit-len(events), maxPageSize))
		cctx, cancel := a.call(ctx)
		resp, err := a.client.ListEvents(cctx, req)
		cancel()
		if err != nil {
			return wrapf(err, "list events")
		}
		page := resp.GetEvents()
		events = append(events, page[:min(len(page), fl.limit-len(events))]...)
		if resp.GetNextPageToken() == "" || resp.GetNextPageToken() == req.PageToken {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if len(events) == 0 && a.output == formatTable {
		fmt.Fprintln(a.stderr, "No events found.")
		return nil
	}
	return a.printEvents(oldestFirst(events), !one)
}
