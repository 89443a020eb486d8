//go:build unix

package e2e

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// historyKeep is the server's --history-keep in TestHistoryAndRollback:
// the three applies fill it, so the rollback ages the first one out.
const historyKeep = "3"

// TestHistoryAndRollback applies three specs and reads them back with
// conctl history (diffs, sources, actors), rolls back to the first with
// --wait, and then asks for a revision the server no longer keeps.
func TestHistoryAndRollback(t *testing.T) {
	begin(t)
	l := startLifecycle(t, "--history-keep", historyKeep)
	l.mustApply(dbKind, "kind db/v1 created")
	for i, spec := range []string{"{size: 1}", "{size: 2}", "{size: 2, engine: postgres}"} {
		l.mustApply(dbDoc("h", "prod", spec))
		l.waitSynced("db", "h", int64(i+1))
	}

	checkHistoryText(t, l.mustCtl("history", "db/h").stdout,
		revisionRow(3, "apply"), revisionRow(2, "apply"), revisionRow(1, "apply"),
		`(?m)^generation 3: apply by api:\S+, `, `(?m)^\+engine: postgres$`,
		`(?m)^generation 2: apply by api:\S+, `, `(?m)^-size: 1$`, `(?m)^\+size: 2$`,
		`(?m)^generation 1: apply by api:\S+, `, `(?m)^\+size: 1$`)
	if revs := l.history("db/h"); len(revs) != 3 {
		t.Errorf("history of three applies: %d revisions; want 3", len(revs))
	}

	res := l.mustCtl("rollback", "db/h", "--to", "1", "--reason", "postgres is not ready", "--wait")
	if !strings.Contains(res.stdout, "now generation 4") {
		t.Errorf("rollback --to 1: want it to report generation 4:\n%s", res)
	}
	h := l.get("db/h")
	if spec := h.GetSpec().AsMap(); h.GetGeneration() != 4 || h.GetSyncedGeneration() != 4 || !sameJSON(spec, map[string]any{"size": 1}) {
		t.Errorf("db/h after rollback --to 1 --wait: %s spec %v; want generation 4 synced, spec {size: 1}", describe(h), spec)
	}
	if _, gen, _, _ := seen(t, h); gen != 4 {
		t.Errorf("the worker's last reconcile of db/h was at generation %d; want 4", gen)
	}
	revs := l.history("db/h")
	if len(revs) != 3 || revs[0].GetGeneration() != 4 || revs[0].GetSource() != "rollback" ||
		!strings.HasPrefix(revs[0].GetActor(), "api:") || !sameJSON(revs[0].GetSpec().AsMap(), map[string]any{"size": 1}) {
		t.Errorf("history after the rollback: %s; want the newest of %s: generation 4, source rollback by api:…, spec {size: 1}",
			renderRevisions(revs), historyKeep)
	}
	checkHistoryText(t, l.mustCtl("history", "db/h").stdout, revisionRow(4, "rollback"),
		`(?m)^generation 4: rollback by api:\S+, `, `(?m)^-engine: postgres$`, `(?m)^-size: 2$`, `(?m)^\+size: 1$`)
	rolled := lastEvent(t, l.srv.api, "db", "h", "RolledBack")
	if !strings.Contains(rolled.GetMessage(), "postgres is not ready") || !strings.HasPrefix(rolled.GetActor(), "api:") {
		t.Errorf("the RolledBack event: %q by %q; want the reason and an api: actor", rolled.GetMessage(), rolled.GetActor())
	}

	res = l.ctl("rollback", "db/h", "--to", "1")
	const agedOut = "generation 1 of default/db/h: aged out: the oldest kept generation is 2 (the last 3 are kept)"
	if res.code == 0 || !strings.Contains(res.stderr, agedOut) {
		t.Errorf("rollback to an aged-out generation: want a non-zero exit saying %q:\n%s", agedOut, res)
	}
	if code, body := postJSON(t, l.srv.url+"/api/v1/namespaces/default/resources/db/h/rollback", `{"generation": "1"}`); code != 404 ||
		!strings.Contains(body, "aged out") {
		t.Errorf("REST rollback to an aged-out generation: %d %s; want 404 saying it aged out", code, body)
	}
	if h := l.get("db/h"); h.GetGeneration() != 4 {
		t.Errorf("a refused rollback changed db/h: %s", describe(h))
	}
}

// history reads a resource's revisions with conctl history -o json.
func (l *lifecycle) history(ref string) []*convergev1.Revision {
	l.t.Helper()
	out := l.mustCtl("history", ref, "-o", "json").stdout
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		l.t.Fatalf("conctl history %s -o json: %v\n%s", ref, err, out)
	}
	revs := make([]*convergev1.Revision, len(raw))
	for i, r := range raw {
		revs[i] = &convergev1.Revision{}
		unmarshalProto(l.t, string(r), revs[i])
	}
	return revs
}

func renderRevisions(revs []*convergev1.Revision) string {
	parts := make([]string, len(revs))
	for i, r := range revs {
		parts[i] = strings.Join([]string{strconv.FormatInt(r.GetGeneration(), 10), r.GetSource(), r.GetActor(), r.GetSpec().String()}, " ")
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// revisionRow matches the row of conctl history's table for generation gen
// from source, caused by an API caller.
func revisionRow(gen int, source string) string {
	return `(?m)^` + strconv.Itoa(gen) + `\s+\S+ \([^)]*\)\s+` + source + `\s+api:\S+\s*$`
}

// checkHistoryText checks conctl history's output against each pattern.
func checkHistoryText(t *testing.T, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(out) {
			t.Errorf("conctl history has nothing matching %s:\n%s", p, out)
		}
	}
}
