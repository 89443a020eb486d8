package conctl

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func (a *app) tasksCmd() *cobra.Command {
	var limit int
	var id int64
	cmd := &cobra.Command{
		Use:   "tasks KIND/NAME",
		Short: "Show a resource's task records: what its last tasks were sent and returned, and what became of them",
		Long: `Tasks lists the task records the server keeps for a resource, newest first
(the last N of each resource, see converge serve --task-records): each
task's trigger, generation and attempt, the worker that ran it, how long it
waited between claim and dispatch and ran between dispatch and its end,
whether its result was applied or discarded by the fence (and why), and
the head of its error.

--id N shows one record whole: the input the worker was sent (spec,
effective config with values under secret-looking keys redacted, the
values that flowed in from dependencies) and the result it returned.
-o json and -o yaml print the API's TaskRecord messages.`,
		Example: `  conctl tasks subnet/acme-app
  conctl tasks subnet/acme-app --id 812 -o json`,
		Args: exactArgs(1, "KIND/NAME, e.g. subnet/acme-app"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			if limit < 1 || limit > 100 {
				return usagef("--limit: %d is not in 1..100", limit)
			}
			if cmd.Flags().Changed("id") {
				if id < 1 {
					return usagef("--id: %d is not positive", id)
				}
				return a.taskRecord(cmd.Context(), ref, id)
			}
			return a.tasks(cmd.Context(), ref, limit)
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 20, "show at most this many records, newest first (1..100)")
	cmd.Flags().Int64Var(&id, "id", 0, "show the record with this id whole")
	return cmd
}

func (a *app) tasks(ctx context.Context, ref resourceRef, limit int) error {
	ctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.ListTaskRecords(ctx, &convergev1.ListTaskRecordsRequest{
		Namespace: ref.namespace, Kind: ref.kind, Name: ref.name, PageSize: int32(limit)})
	if err != nil {
		return wrapf(err, "tasks %s", ref)
	}
	if a.machine() {
		msgs := make([]proto.Message, len(resp.GetRecords()))
		for i, r := range resp.GetRecords() {
			msgs[i] = r
		}
		return a.printMessages(msgs, false)
	}
	if len(resp.GetRecords()) == 0 {
		fmt.Fprintf(a.stderr, "No task records found for resource %s (records may be off: converge serve --task-records).\n", ref)
		return nil
	}
	return writeTaskTable(a.stdout, resp.GetRecords(), a.now())
}

func (a *app) taskRecord(ctx context.Context, ref resourceRef, id int64) error {
	ctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.GetTaskRecord(ctx, &convergev1.GetTaskRecordRequest{Id: id})
	if err != nil {
		return wrapf(err, "task record %d", id)
	}
	r := resp.GetRecord()
	if got := r.GetResource(); got.GetKind() != ref.kind || got.GetName() != ref.name || got.GetNamespace() != ref.namespace {
		return usagef("--id: task record %d is of %s/%s/%s, not of %s", id, got.GetNamespace(), got.GetKind(), got.GetName(), ref)
	}
	if a.machine() {
		return a.printMessages([]proto.Message{r}, true)
	}
	if err := writeTaskTable(a.stdout, []*convergev1.TaskRecord{r}, a.now()); err != nil {
		return err
	}
	for _, part := range []struct {
		name string
		msg  proto.Message
	}{{"Input", r.GetInput()}, {"Result", r.GetResult()}} {
		fmt.Fprintf(a.stdout, "\n%s:\n", part.name)
		raw, err := protoJSON(part.msg)
		if err != nil {
			return err
		}
		if err := a.printJSON(indented(a.stdout), raw); err != nil {
			return err
		}
	}
	return nil
}

// writeTaskTable prints records one a row: WAIT is claim to dispatch, RUN
// dispatch to end.
func writeTaskTable(w io.Writer, recs []*convergev1.TaskRecord, now time.Time) error {
	t := newTable(w, "ID", "ENDED", "TRIGGER", "GEN", "ATTEMPT", "WORKER", "WAIT", "RUN", "OUTCOME", "ERROR")
	for _, r := range recs {
		outcome := r.GetOutcome()
		if r.GetDiscardReason() != "" {
			outcome += ": " + r.GetDiscardReason()
		}
		errHead := ""
		if r.GetFailed() {
			errHead = r.GetError()
			if r.GetErrorReason() != "" {
				errHead = r.GetErrorReason() + ": " + errHead
			}
			if r.GetTerminal() {
				errHead = "terminal " + errHead
			}
		}
		t.row(strconv.FormatInt(r.GetId(), 10), age(now, r.GetEndedAt()), r.GetTrigger(),
			strconv.FormatInt(r.GetGeneration(), 10), strconv.Itoa(int(r.GetAttempt())), r.GetWorker(),
			span(r.GetClaimedAt(), r.GetDispatchedAt()), span(r.GetDispatchedAt(), r.GetEndedAt()),
			truncate(outcome, 60), truncate(errHead, 60))
	}
	return t.flush()
}

// span is the time from a to b, to the millisecond; "-" when either is
// unset.
func span(a, b *timestamppb.Timestamp) string {
	if a == nil || b == nil {
		return "-"
	}
	return b.AsTime().Sub(a.AsTime()).Round(time.Millisecond).String()
}
