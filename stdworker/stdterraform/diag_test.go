package stdterraform

import (
	"strings"
	"testing"
	"unicode/utf8"
)

const initSyntaxError = `exit status 1

Error: Unclosed configuration block

  on .terraform/init-from-module/root/main.tf line 1, in resource "terraform_data" "x":
   1: resource "terraform_data" "x" {

There is no closing brace for this block before the end of the file. This may
be caused by incorrect brace nesting elsewhere in this file.
`

const boxedWarningThenError = `There are some problems with the CLI configuration:
╷
│ Warning: Unable to open CLI configuration file
│
│ The CLI configuration file at "/root/.terraformrc" does not exist.
╵

╷
│ Error: Invalid value for input variable
│
│   on vars.json line 1:
│    1: {"size":"big"}
│
│ The given value is not suitable for var.size declared at main.tf:1,1-16: a
│ number is required.
╵
`

func TestMessage(t *testing.T) {
	for name, tc := range map[string]struct {
		out, want string
		config    bool
	}{
		"syntax":         {initSyntaxError, "Unclosed configuration block (main.tf line 1): There is no closing brace for this block before the end of the file. This may be caused by incorrect brace nesting elsewhere in this file.", true},
		"boxed":          {boxedWarningThenError, "Invalid value for input variable (vars.json line 1): The given value is not suitable for var.size declared at main.tf:1,1-16: a number is required.", true},
		"download":       {"Error: Failed to download module\n\n  on <main configuration> line 1:\n\nbad response code: 404\n", "Failed to download module (<main configuration> line 1): bad response code: 404", false},
		"no diagnostics": {"exit status 1\n\nsomething\nbroke\n", "exit status 1 something broke", false},
		"two errors":     {"Error: A\n\ndetail a\n\nError: B\n\ndetail b\n", "A: detail a; B: detail b", false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := message(tc.out); got != tc.want {
				t.Errorf("message =\n %q\nwant\n %q", got, tc.want)
			}
			if got := configError(tc.out); got != tc.config {
				t.Errorf("configError = %v, want %v", got, tc.config)
			}
		})
	}
}

func TestVariableError(t *testing.T) {
	if !variableError(boxedWarningThenError) {
		t.Error("an invalid variable value should be a variable error")
	}
	if variableError(initSyntaxError) {
		t.Error("a syntax error is not a variable error")
	}
	provider := "Error: creating instance: quota exceeded\n\n  with aws_instance.x,\n  on main.tf line 3, in resource \"aws_instance\" \"x\":\n   3: resource \"aws_instance\" \"x\" {\n"
	if variableError(provider) {
		t.Error("a provider API error is not a variable error, so an apply retries it")
	}
}

func TestMessageIsBounded(t *testing.T) {
	out := "Error: " + strings.Repeat("é", 5000)
	got := message(out)
	if len(got) > maxMessage || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("message of %d bytes: %d bytes, valid UTF-8 %v, want at most %d bytes ending in …", len(out), len(got), utf8.ValidString(got), maxMessage)
	}
}

// FuzzMessage feeds terraform's output (untrusted: it quotes the module's
// source) to the parser: it must not panic, and stays bounded.
func FuzzMessage(f *testing.F) {
	f.Add(initSyntaxError)
	f.Add(boxedWarningThenError)
	f.Add("Error: \n  on  line 1:\n│")
	f.Fuzz(func(t *testing.T, out string) {
		m := message(out)
		if len(m) > maxMessage {
			t.Fatalf("message of %d bytes", len(m))
		}
		_ = configError(out)
		_ = variableError(out)
	})
}
