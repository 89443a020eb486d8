package conctl_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/conctl"
)

func TestLifecycleCommandsExplainThemselves(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"\n  history ", "\n  rollback ", "\n  quarantine ", "\n  unquarantine ", "\n  reconcile ", "\n  op ", "\n  kind "}},
		{[]string{"apply", "--help"}, []string{"providerconfig", "reactorbinding", "provider_config", "transitions", "They are applied in that order"}},
		{[]string{"history", "--help"}, []string{"--limit int", "--no-diff", "unified diff", "no longer", "conctl rollback"}},
		{[]string{"rollback", "--help"}, []string{"--to int", "--reason string", "--wait", "no\nlonger keeps"}},
		{[]string{"quarantine", "--help"}, []string{"--reason string", "required", "conctl unquarantine"}},
		{[]string{"reconcile", "--help"}, []string{"--wait", "failed terminally"}},
		{[]string{"op", "--help"}, []string{"--input string", "input_schema", "conctl op get ID", "op list"}},
		{[]string{"kind", "policy", "--help"}, []string{"--set stringArray", "max_inflight", "deletion_policy", "(unset: no cap)"}},
		{[]string{"get", "--help"}, []string{"providerconfig KIND/VERSION/NAME", "reactorbinding NAME", "conctl get pc greeting/v1/default"}},
		{[]string{"describe", "--help"}, []string{"provider config", "last operations"}},
	} {
		var out bytes.Buffer
		if code := conctl.Run(context.Background(), tc.args, conctl.WithStdio(nil, &out, &out)); code != 0 {
			t.Errorf("%v: exit %d", tc.args, code)
			continue
		}
		for _, want := range tc.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("conctl %s lacks %q:\n%s", strings.Join(tc.args, " "), want, out.String())
			}
		}
	}
}
