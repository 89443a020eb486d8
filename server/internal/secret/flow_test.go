package secret

import (
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/flow"
	"github.com/convergehq/converge/server/internal/schema"
)

func compileSchema(t *testing.T, src string) *schema.Schema {
	t.Helper()
	doc, err := schema.Decode([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Compile("test", doc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCheckFlow(t *testing.T) {
	s := FlowSchemas{
		Dependency: "data.db v1", Dependent: "app.web v1",
		DependencyStatus: compileSchema(t, `{"type":"object","properties":{"host":{"type":"string"},"creds":{"type":"object","properties":{"password":{"type":"string","writeOnly":true}}}}}`),
		DependencySpec:   compileSchema(t, `{"type":"object","properties":{"admin_token":{"type":"string","x-converge-secret":true},"size":{"type":"integer"}}}`),
		DependentSpec:    compileSchema(t, `{"type":"object","properties":{"db_password":{"type":"string","writeOnly":true},"db_host":{"type":"string"},"url":{"type":"string"}}}`),
	}
	cases := []struct {
		from, expr, to string
		refused        string
	}{
		{from: "/creds/password", to: "/db_password"},
		{from: "/host", to: "/db_host"},
		{from: "/creds/password", to: "/db_host", refused: "reads status /creds/password of data.db v1, which is or holds the secret /creds/password, but writes /db_host"},
		{from: "/creds", to: "/url", refused: "status /creds"},
		{expr: `"postgres://" + status.host`, to: "/url"},
		{expr: `"postgres://u:" + status.creds.password + "@" + status.host`, to: "/url", refused: "status /creds/password"},
		{expr: `"postgres://u:" + status.creds.password + "@" + status.host`, to: "/db_password"},
		{expr: `spec.admin_token`, to: "/url", refused: "spec /admin_token"},
		{expr: `string(spec.size)`, to: "/url"},
		{expr: `status.creds[spec.size > 1 ? "password" : "x"]`, to: "/url", refused: "status /creds"},
		{expr: `string(size(status))`, to: "/url", refused: "status /"},
	}
	for _, c := range cases {
		p, err := flow.Compile(c.from, c.expr, c.to)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		err = CheckFlow(p, s)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s%s -> %s refused: %v", c.from, c.expr, c.to, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s%s -> %s = %v, want a refusal containing %q", c.from, c.expr, c.to, err, c.refused)
		}
	}
}
