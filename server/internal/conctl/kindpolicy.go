package conctl

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"buf.build/go/protovalidate"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/document"
	"github.com/convergehq/converge/server/internal/limits"
)

func (a *app) kindCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kind policy KIND/VERSION [--set FIELD=VALUE ...]",
		Short: "Change a kind version live, without re-applying its manifest",
		Long: `Kind changes parts of a kind version that operators tune while it runs,
without re-applying the manifest its team owns. Every replica picks the
change up within a second; nothing restarts.`,
		Example: `  conctl kind policy greeting/v1
  conctl kind policy greeting/v1 --set max_inflight=10 --set retired=true`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("%s needs a subcommand: policy", cmd.CommandPath())
			}
			return usagef("%s: unknown subcommand %q (the one there is: policy)", cmd.CommandPath(), args[0])
		},
	}
	cmd.AddCommand(a.kindPolicyCmd())
	return cmd
}

func (a *app) kindPolicyCmd() *cobra.Command {
	var sets []string
	cmd := &cobra.Command{
		Use:   "policy KIND/VERSION [--set FIELD=VALUE ...]",
		Short: "Show or change a kind version's policy",
		Long: fmt.Sprintf(`Policy shows a kind version's policy; with --set it changes the fields
named and leaves the others as they are.

The fields:
%s
Integers take a number, booleans true or false, deletion_policy delete or
retain, management_policy full or observe (observe needs the kind to have
an observe reaction; the kind's resources without a policy of their own
move over, each recording the change); an empty value ("deletion_policy=") or 0 returns a field to the
server's default. max_transient_attempts=-1 means never give up: the
failure stays transient however often it recurs.`, policyFieldHelp()),
		Example: `  conctl kind policy greeting/v1
  conctl kind policy greeting/v1 --set max_inflight=10
  conctl kind policy greeting/v1 --set retired=true --set resync_interval_seconds=600
  conctl kind policy greeting/v1 -o json`,
		Args: exactArgs(1, "KIND/VERSION, e.g. greeting/v1"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseKindRef(args[0])
			if err != nil {
				return err
			}
			if ref.version == 0 {
				return usagef("kind policy needs KIND/VERSION, e.g. %s/v1: each version has its own policy", ref.kind)
			}
			if len(sets) == 0 {
				return a.showPolicy(cmd.Context(), ref)
			}
			policy, mask, err := parsePolicySets(sets)
			if err != nil {
				return err
			}
			return a.updatePolicy(cmd.Context(), ref, policy, mask)
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "FIELD=VALUE to change; repeatable")
	a.dryRunFlag(cmd, false)
	return cmd
}

// policyZero says what a policy field's zero value means.
var policyZero = map[string]string{
	"max_inflight":            "no cap",
	"task_deadline_seconds":   "server default",
	"resync_interval_seconds": "never",
	"orphan_grace_seconds":    "prune at once",
	"max_transient_attempts":  fmt.Sprintf("server default, %d", limits.DefaultMaxTransientAttempts),
	"deletion_policy":         "delete",
	"management_policy":       "full",
}

func policyFields() protoreflect.FieldDescriptors {
	return (&convergev1.KindPolicy{}).ProtoReflect().Descriptor().Fields()
}

func policyFieldNames() []string {
	fields := policyFields()
	names := make([]string, fields.Len())
	for i := range fields.Len() {
		names[i] = string(fields.Get(i).Name())
	}
	return names
}

func policyFieldHelp() string {
	var b strings.Builder
	fields := policyFields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		zero := ""
		if z, ok := policyZero[string(fd.Name())]; ok {
			zero = " (unset: " + z + ")"
		}
		typ := map[protoreflect.Kind]string{protoreflect.Int32Kind: "integer", protoreflect.BoolKind: "boolean"}[fd.Kind()]
		fmt.Fprintf(&b, "  %-24s %s%s\n", fd.Name(), or(typ, fd.Kind().String()), zero)
	}
	return b.String()
}

// parsePolicySets turns --set FIELD=VALUE flags into a policy holding the
// values and the mask of the fields set, checking each value by its
// field's type and rules.
func parsePolicySets(sets []string) (*convergev1.KindPolicy, []string, error) {
	policy := &convergev1.KindPolicy{}
	m := policy.ProtoReflect()
	given := map[protoreflect.FieldNumber]string{}
	var mask []string
	for _, set := range sets {
		name, value, ok := strings.Cut(set, "=")
		if !ok || name == "" {
			return nil, nil, usagef("--set %q: want FIELD=VALUE, e.g. max_inflight=10", set)
		}
		fd := policyFields().ByName(protoreflect.Name(name))
		if fd == nil {
			fd = policyFields().ByJSONName(name)
		}
		if fd == nil {
			return nil, nil, usagef("--set %s: unknown policy field %q; the fields are %s", set, name, strings.Join(policyFieldNames(), ", "))
		}
		if prev, ok := given[fd.Number()]; ok {
			return nil, nil, usagef("--set %s: %s is already set by --set %s", set, fd.Name(), prev)
		}
		given[fd.Number()] = set
		v, err := policyValue(fd, value)
		if err != nil {
			return nil, nil, usagef("--set %s: %s", set, err)
		}
		m.Set(fd, v)
		mask = append(mask, string(fd.Name()))
	}
	if err := protovalidate.Validate(policy); err != nil {
		var verr *protovalidate.ValidationError
		if !errors.As(err, &verr) || len(verr.Violations) == 0 {
			return nil, nil, fmt.Errorf("cannot check the policy: %w", err)
		}
		v := verr.Violations[0]
		name := protovalidate.FieldPathString(v.Proto.GetField())
		fd := policyFields().ByName(protoreflect.Name(name))
		set := name
		if fd != nil {
			set = given[fd.Number()]
		}
		return nil, nil, usagef("--set %s: %s", set, strings.TrimPrefix(document.ViolationMessage(v), name+": "))
	}
	return policy, mask, nil
}

// policyValue parses one --set value by its field's type.
func policyValue(fd protoreflect.FieldDescriptor, s string) (protoreflect.Value, error) {
	switch fd.Kind() {
	case protoreflect.Int32Kind:
		i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return protoreflect.Value{}, fmt.Errorf("want an integer, got %q", s)
		}
		return protoreflect.ValueOfInt32(int32(i)), nil
	case protoreflect.BoolKind:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return protoreflect.Value{}, fmt.Errorf("want true or false, got %q", s)
		}
		return protoreflect.ValueOfBool(b), nil
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(s), nil
	}
	return protoreflect.Value{}, fmt.Errorf("%s is a %s, which conctl cannot set", fd.Name(), fd.Kind())
}

func (a *app) showPolicy(ctx context.Context, ref kindRef) error {
	ctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.GetKind(ctx, &convergev1.GetKindRequest{Kind: ref.kind, KindVersion: ref.version})
	if err != nil {
		return wrapf(err, "get kind %s", ref)
	}
	return a.printPolicy(resp.GetManifest().GetPolicy())
}

func (a *app) updatePolicy(ctx context.Context, ref kindRef, policy *convergev1.KindPolicy, mask []string) error {
	ctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.UpdateKindPolicy(ctx, &convergev1.UpdateKindPolicyRequest{
		Kind: ref.kind, KindVersion: ref.version, Policy: policy, UpdateMask: &fieldmaskpb.FieldMask{Paths: mask},
	})
	if err != nil {
		return wrapf(err, "update the policy of kind %s", ref)
	}
	if a.machine() {
		return a.printPolicy(resp.GetManifest().GetPolicy())
	}
	got := resp.GetManifest().GetPolicy().ProtoReflect()
	changes := make([]string, len(mask))
	for i, name := range mask {
		changes[i] = name + "=" + policyText(got.Get(policyFields().ByName(protoreflect.Name(name))))
	}
	fmt.Fprintf(a.stdout, "kind %s policy updated: %s%s\n", ref, strings.Join(changes, ", "), a.dryRunMark())
	return nil
}

// printPolicy prints every field of a policy: a FIELD/VALUE table saying
// what unset values mean, or JSON/YAML with every field present.
func (a *app) printPolicy(p *convergev1.KindPolicy) error {
	if p == nil {
		p = &convergev1.KindPolicy{}
	}
	if a.machine() {
		raw, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(p)
		if err != nil {
			return err
		}
		return a.printJSON(a.stdout, raw)
	}
	t := newTable(a.stdout, "FIELD", "VALUE")
	m := p.ProtoReflect()
	fields := policyFields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		value := policyText(m.Get(fd))
		if z, ok := policyZero[string(fd.Name())]; ok && !m.Has(fd) {
			value = strings.TrimSpace(value + " (" + z + ")")
		}
		t.row(string(fd.Name()), value)
	}
	return t.flush()
}

func policyText(v protoreflect.Value) string {
	return fmt.Sprint(v.Interface())
}
