package conctl

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// describeEvents is how many recent events describe shows.
const describeEvents = 10

func (a *app) describeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe resource KIND/NAME",
		Short: "Explain a resource: its state, failure, conditions, spec, status and events",
		Long: `Describe prints a readable report on one resource: who it is, its labels,
its owner, its provider config, its phase and generations, what it is
waiting for, its failure if it has one (message, attempts, whether it is
terminal, when it is retried), its conditions, its spec and status as YAML,
its last operations and its most recent events.

For a composite it adds how many children are ready, the culprits that keep
it from being Ready (with the composites between it and each of them), and
its tree of descendants with the culprit path marked.

For machine-readable output use "conctl get resource KIND/NAME -o json".`,
		Example: `  conctl describe resource greeting/hello-world
  conctl describe res greeting/hello-world -n team-a
  conctl describe resource landingzone/acme`,
		Args: cobra.ArbitraryArgs,
		RunE: typeArgs,
	}
	var ascii bool
	res := &cobra.Command{
		Use:     "resource KIND/NAME",
		Aliases: resourceAliases[1:],
		Short:   "Explain a resource",
		Long: fmt.Sprintf(`Print a readable report on one resource of --namespace.

A composite's tree goes %d levels deep with up to %d children per resource
and marks the path to each culprit with "*"; "conctl tree" shows more.`, defaultTreeDepth, defaultTreeChildren),
		Example: `  conctl describe resource greeting/hello-world
  conctl describe resource landingzone/acme --ascii`,
		Args: exactArgs(1, "KIND/NAME, e.g. greeting/hello-world"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.output != formatTable {
				return usagef("describe prints a report only; for %s use: conctl get resource %s -o %s", a.output, args[0], a.output)
			}
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			return a.describeResource(cmd.Context(), ref, treeStyleFor(ascii))
		},
	}
	res.Flags().BoolVar(&ascii, "ascii", false, asciiUsage)
	cmd.AddCommand(res)
	return cmd
}

// described is everything the report draws on.
type described struct {
	res       *convergev1.Resource
	events    []*convergev1.Event
	eventsErr error
	ops       []*convergev1.Operation
	opsErr    error
	tree      *convergev1.TreeNode // composites only
	treeErr   error
	treeStyle treeStyle
	now       time.Time
}

// describeSection writes one part of the report.
type describeSection func(w io.Writer, d *described) error

// describeSections is the report, in order.
var describeSections = []describeSection{
	describeIdentity,
	describeState,
	describeRollup,
	describeFailure,
	describeConditions,
	describeSpecAndStatus,
	describeTree,
	describeOperations,
	describeRecentEvents,
}

func (a *app) describeResource(ctx context.Context, ref resourceRef, style treeStyle) error {
	res, err := a.getResource(ctx, ref)
	if err != nil {
		return err
	}
	d := &described{res: res, treeStyle: style, now: a.now()}
	if res.GetRollup() != nil {
		d.tree, d.treeErr = a.getTree(ctx, ref, defaultTreeDepth, defaultTreeChildren)
	}
	cctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.ListEvents(cctx, &convergev1.ListEventsRequest{
		Namespace: ref.namespace, Kind: ref.kind, Name: ref.name, PageSize: describeEvents,
	})
	d.events, d.eventsErr = oldestFirst(resp.GetEvents()), err
	d.ops, d.opsErr = a.recentOperations(ctx, ref)

	var buf bytes.Buffer
	for _, section := range describeSections {
		if err := section(&buf, d); err != nil {
			return err
		}
	}
	_, err = a.stdout.Write(buf.Bytes())
	return err
}

func field(w io.Writer, indent, key, value string) {
	if value == "" {
		value = "<none>"
	}
	fmt.Fprintf(w, "%s%-*s %s\n", indent, 19-len(indent), key+":", value)
}

func describeIdentity(w io.Writer, d *described) error {
	r := d.res
	field(w, "", "Namespace", r.GetNamespace())
	field(w, "", "Kind", r.GetKind()+" "+version(r.GetKindVersion()))
	field(w, "", "Name", r.GetName())
	field(w, "", "UID", r.GetUid())
	describeOwner(w, r)
	keys := make([]string, 0, len(r.GetLabels()))
	for k := range r.GetLabels() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var labels []string
	for _, k := range keys {
		labels = append(labels, k+"="+r.GetLabels()[k])
	}
	field(w, "", "Labels", strings.Join(labels, "\n"+strings.Repeat(" ", 20)))
	field(w, "", "Created", when(d.now, r.GetCreatedAt()))
	field(w, "", "Updated", when(d.now, r.GetUpdatedAt()))
	if p := r.GetDeletionPolicy(); p != "" {
		field(w, "", "Deletion policy", p)
	}
	if c := r.GetProviderConfig(); c != "" {
		field(w, "", "Provider config", c)
	}
	if m := r.GetEffectiveManagementPolicy(); m == "observe" || r.GetManagementPolicy() != "" {
		if r.GetManagementPolicy() == "" {
			m += " (the kind's)"
		}
		field(w, "", "Managed", m)
	}
	if id := r.GetImport().GetId(); id != "" {
		field(w, "", "Import", id)
	}
	if r.GetDeletionRequestedAt() != nil {
		field(w, "", "Deletion requested", when(d.now, r.GetDeletionRequestedAt()))
	}
	return nil
}

func describeState(w io.Writer, d *described) error {
	r := d.res
	field(w, "", "Phase", r.GetPhase())
	if wt := r.GetWaiting(); wt != "" {
		field(w, "", "Waiting", wt)
	}
	field(w, "", "Generation", fmt.Sprintf("%d (synced %d)", r.GetGeneration(), r.GetSyncedGeneration()))
	field(w, "", "Healthy", strconv.FormatBool(r.GetHealthy()))
	field(w, "", "Reconciles", strconv.FormatInt(r.GetReconciles(), 10))
	return nil
}

func describeFailure(w io.Writer, d *described) error {
	f := d.res.GetFailure()
	if f == nil {
		field(w, "", "Failure", "")
		return nil
	}
	fmt.Fprintln(w, "Failure:")
	if f.GetReason() != "" {
		field(w, "  ", "Reason", f.GetReason())
	}
	field(w, "  ", "Message", strings.ReplaceAll(f.GetMessage(), "\n", "\n"+strings.Repeat(" ", 20)))
	field(w, "  ", "Attempts", strconv.Itoa(int(f.GetAttempts())))
	field(w, "  ", "Terminal", strconv.FormatBool(f.GetTerminal()))
	field(w, "  ", "Generation", strconv.FormatInt(f.GetGeneration(), 10))
	if f.GetRetryAt() != nil {
		field(w, "  ", "Retry at", when(d.now, f.GetRetryAt()))
	}
	return nil
}

func describeConditions(w io.Writer, d *described) error {
	conds := d.res.GetConditions()
	if len(conds) == 0 {
		field(w, "", "Conditions", "")
		return nil
	}
	fmt.Fprintln(w, "Conditions:")
	t := newTable(indented(w), "TYPE", "STATUS", "REASON", "AGE", "MESSAGE")
	for _, c := range conds {
		t.row(c.GetType(), c.GetStatus(), c.GetReason(), age(d.now, c.GetLastTransitionTime()), truncate(c.GetMessage(), maxMessageWidth))
	}
	return t.flush()
}

func describeSpecAndStatus(w io.Writer, d *described) error {
	for _, part := range []struct {
		name string
		s    *structpb.Struct
	}{{"Spec", d.res.GetSpec()}, {"Status", d.res.GetStatus()}} {
		if len(part.s.GetFields()) == 0 {
			field(w, "", part.name, "")
			continue
		}
		fmt.Fprintln(w, part.name+":")
		if err := writeStruct(indented(w), part.s); err != nil {
			return err
		}
	}
	return nil
}

func describeRecentEvents(w io.Writer, d *described) error {
	switch {
	case d.eventsErr != nil:
		field(w, "", "Events", "could not be listed: "+message(d.eventsErr))
		return nil
	case len(d.events) == 0:
		field(w, "", "Events", "")
		return nil
	}
	fmt.Fprintf(w, "Events (last %d, oldest first):\n", describeEvents)
	t := newTable(indented(w), "AGE", "TYPE", "REASON", "ACTOR", "MESSAGE")
	for _, e := range d.events {
		t.row(age(d.now, e.GetTime()), e.GetType(), e.GetReason(), e.GetActor(), truncate(e.GetMessage(), maxMessageWidth))
	}
	return t.flush()
}

// when shows a time and how far it is from now.
func when(now time.Time, ts *timestamppb.Timestamp) string {
	if ts == nil {
		return ""
	}
	t := ts.AsTime()
	rel := shortDuration(now.Sub(t)) + " ago"
	if t.After(now) {
		rel = "in " + shortDuration(t.Sub(now))
	}
	return t.UTC().Format(time.RFC3339) + " (" + rel + ")"
}

// indented writes to w with every line indented by two spaces.
func indented(w io.Writer) io.Writer { return &indentWriter{w: w, bol: true} }

type indentWriter struct {
	w   io.Writer
	bol bool
}

func (iw *indentWriter) Write(p []byte) (int, error) {
	var buf bytes.Buffer
	for _, c := range p {
		if iw.bol && c != '\n' {
			buf.WriteString("  ")
		}
		buf.WriteByte(c)
		iw.bol = c == '\n'
	}
	if _, err := iw.w.Write(buf.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}
