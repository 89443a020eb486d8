package conctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/document"
)

type opFlags struct {
	input  string
	reason string
	waitFlags
}

func (a *app) opCmd() *cobra.Command {
	var fl opFlags
	cmd := &cobra.Command{
		Use:   "op KIND/NAME VERB [--input FILE|-|JSON]",
		Short: "Invoke an operation verb on a resource, or show operations",
		Long: `Op invokes an operation verb the resource's kind declares (see the
operations of "conctl get kind KIND/VERSION -o yaml"), such as a snapshot
or a key rotation. The server checks the input against the verb's
input_schema, then a worker runs it asynchronously; op prints the
operation's id and state.

--input is the verb's input, a mapping: inline JSON ('{"keep": 2}'), a
JSON or YAML file, or "-" for standard input. Left out, the input is empty.

With --wait, op then waits until the operation has succeeded (exit 0) or
failed (exit 1) and prints its output. Without it, follow the operation
with "conctl op get ID".`,
		Example: `  conctl op database/orders snapshot --input '{"keep": 2}' --reason "before the migration" --wait
  conctl op greeting/hello-world rotate-keys --input rotate.yaml
  conctl op get op-01hx5
  conctl op list database/orders`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usagef("%s needs KIND/NAME VERB, e.g. database/orders snapshot (or: op get ID, op list KIND/NAME)", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			if err := fl.check(a.stderr); err != nil {
				return err
			}
			return a.invoke(cmd.Context(), ref, args[1], fl)
		},
	}
	cmd.Flags().StringVar(&fl.input, "input", "", `the verb's input: inline JSON, a JSON or YAML file, or "-" (stdin)`)
	cmd.Flags().StringVar(&fl.reason, "reason", "", reasonUsage)
	fl.register(cmd, "wait until the operation has succeeded or failed, and print its output")
	cmd.AddCommand(a.opGetCmd(), a.opListCmd())
	return cmd
}

// readInput reads --input: "-" is stdin, a value starting with "{" is
// inline JSON, anything else a file.
func (a *app) readInput(arg string) (*structpb.Struct, error) {
	switch {
	case arg == "":
		return nil, nil
	case strings.HasPrefix(strings.TrimSpace(arg), "{"):
		return document.ParseObject("--input", []byte(arg))
	}
	return document.ReadObject(arg, a.stdin)
}

func (a *app) invoke(ctx context.Context, ref resourceRef, verb string, fl opFlags) error {
	input, err := a.readInput(fl.input)
	if err != nil {
		return err
	}
	cctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.InvokeOperation(cctx, &convergev1.InvokeOperationRequest{
		Namespace: ref.namespace, Kind: ref.kind, Name: ref.name, Verb: verb, Input: input, Reason: fl.reason,
	})
	if err != nil {
		return wrapf(err, "invoke %s on resource %s", verb, ref)
	}
	op := resp.GetOperation()
	a.reportLine("operation %s (%s on %s) %s", op.GetId(), verb, ref, op.GetState())
	if !fl.wait {
		if a.machine() {
			return a.printMessages([]proto.Message{op}, true)
		}
		return nil
	}
	wctx, wcancel := context.WithTimeout(ctx, fl.timeout)
	defer wcancel()
	final, err := a.client.WaitForOperation(wctx, op.GetId())
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return fmt.Errorf("timed out after %s waiting for operation %s (%s)", fl.timeout, op.GetId(), or(final.GetState(), op.GetState()))
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted while waiting for operation %s", op.GetId())
	case err != nil:
		return wrapf(err, "wait for operation %s", op.GetId())
	}
	return a.reportOperation(final)
}

// reportOperation prints a finished operation and fails when it failed.
func (a *app) reportOperation(op *convergev1.Operation) error {
	if a.machine() {
		if err := a.printMessages([]proto.Message{op}, true); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "operation %s %s\n", op.GetId(), op.GetState())
		if len(op.GetOutput().GetFields()) > 0 {
			fmt.Fprintln(a.stdout, "Output:")
			if err := writeStruct(indented(a.stdout), op.GetOutput()); err != nil {
				return err
			}
		}
	}
	if op.GetState() == client.OperationFailed {
		return fmt.Errorf("operation %s failed: %s", op.GetId(), or(op.GetMessage(), "no message"))
	}
	return nil
}

func (a *app) opGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show one operation: its state, input and output",
		Long: `Show an operation by its id (as op printed it): the resource and verb,
its state (pending, running, succeeded or failed), who asked and why, when,
its input, and its output or failure message.`,
		Example: `  conctl op get op-01hx5
  conctl op get op-01hx5 -o json`,
		Args: exactArgs(1, "an operation ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			resp, err := a.client.GetOperation(ctx, &convergev1.GetOperationRequest{Id: args[0]})
			if err != nil {
				return wrapf(err, "get operation %s", args[0])
			}
			if a.machine() {
				return a.printMessages([]proto.Message{resp.GetOperation()}, true)
			}
			return a.describeOperation(resp.GetOperation())
		},
	}
}

func (a *app) opListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list KIND/NAME",
		Short: "List the operations invoked on a resource, newest first",
		Long:  `List the most recent operations (up to 100) invoked on a resource of --namespace, newest first.`,
		Example: `  conctl op list database/orders
  conctl op list database/orders -o yaml`,
		Args: exactArgs(1, "KIND/NAME, e.g. database/orders"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			ops, err := a.listOperations(cmd.Context(), ref)
			if err != nil {
				return err
			}
			if len(ops) == 0 && a.output == formatTable {
				fmt.Fprintf(a.stderr, "No operations found for resource %s.\n", ref)
				return nil
			}
			return a.printOperations(ops)
		},
	}
}

func (a *app) listOperations(ctx context.Context, ref resourceRef) ([]*convergev1.Operation, error) {
	ctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.ListOperations(ctx, &convergev1.ListOperationsRequest{Namespace: ref.namespace, Kind: ref.kind, Name: ref.name})
	if err != nil {
		return nil, wrapf(err, "list operations of %s", ref)
	}
	return resp.GetOperations(), nil
}

// printOperations prints operations as a table, or as JSON/YAML.
func (a *app) printOperations(ops []*convergev1.Operation) error {
	if a.machine() {
		msgs := make([]proto.Message, len(ops))
		for i, op := range ops {
			msgs[i] = op
		}
		return a.printMessages(msgs, false)
	}
	return writeOperations(a.stdout, ops, a.now())
}

func writeOperations(w io.Writer, ops []*convergev1.Operation, now time.Time) error {
	t := newTable(w, "ID", "VERB", "STATE", "AGE", "ACTOR", "MESSAGE")
	for _, op := range ops {
		t.row(op.GetId(), op.GetVerb(), op.GetState(), age(now, op.GetRequestedAt()), op.GetActor(), truncate(op.GetMessage(), maxMessageWidth))
	}
	return t.flush()
}

// describeOperation prints one operation as a report.
func (a *app) describeOperation(op *convergev1.Operation) error {
	w, now := a.stdout, a.now()
	field(w, "", "ID", op.GetId())
	field(w, "", "Resource", refID(op.GetResource(), a.namespace))
	field(w, "", "Verb", op.GetVerb())
	field(w, "", "State", op.GetState())
	field(w, "", "Requested", when(now, op.GetRequestedAt()))
	if op.GetFinishedAt() != nil {
		field(w, "", "Finished", when(now, op.GetFinishedAt()))
	}
	field(w, "", "Attempts", fmt.Sprint(op.GetAttempts()))
	field(w, "", "Actor", op.GetActor())
	field(w, "", "Reason", op.GetReason())
	if m := op.GetMessage(); m != "" {
		field(w, "", "Message", strings.ReplaceAll(m, "\n", "\n"+strings.Repeat(" ", 20)))
	}
	for _, part := range []struct {
		name string
		s    *structpb.Struct
	}{{"Input", op.GetInput()}, {"Output", op.GetOutput()}} {
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
