//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// TestTaskRecordOfFailedChild has one VPC of a landing zone fail: its
// task record, read with conctl tasks, holds the account id that flowed
// into its spec and the handler's error, applied, with the worker that
// ran it.
func TestTaskRecordOfFailedChild(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applyLandingZoneKinds(t, srv)
	const zone, accounts, msg = "tr", 2, "subnet quota exceeded"
	broken := vpcName(zone, 1)
	startLandingZone(t, srv, "landingzone -fail", "-fail", kindVPC+":"+broken+":"+msg)
	if res := conctl(t, srv, zoneDoc(zone, accounts, ""), "apply", "-f", "-"); res.code != 0 {
		t.Fatalf("apply of a landing zone:\n%s", res)
	}
	vpc := waitPhase(t, srv.api, kindVPC, broken, client.PhaseFailed)
	accountID := stringField(vpc.GetSpec(), "account_id")
	if accountID == "" {
		t.Fatalf("the failed VPC's spec has no account_id: %s", explain(vpc))
	}

	// Records are written behind the result, batched: poll until this one is.
	shows := func(r ctlResult) bool {
		return r.code == 0 && strings.Contains(r.stdout, "applied") && strings.Contains(r.stdout, "terminal") &&
			strings.Contains(r.stdout, msg)
	}
	list := conctl(t, srv, "", "tasks", kindVPC+"/"+broken)
	for deadline := time.Now().Add(10 * time.Second); !shows(list) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		list = conctl(t, srv, "", "tasks", kindVPC+"/"+broken)
	}
	if !shows(list) {
		t.Fatalf("conctl tasks %s/%s does not show an applied terminal failure %q:\n%s", kindVPC, broken, msg, list)
	}
	js := conctl(t, srv, "", "tasks", kindVPC+"/"+broken, "-o", "json")
	var recs []struct {
		ID     string `json:"id"`
		Failed bool   `json:"failed"`
	}
	if js.code != 0 || json.Unmarshal([]byte(js.stdout), &recs) != nil {
		t.Fatalf("conctl tasks -o json:\n%s", js)
	}
	id := ""
	for _, r := range recs {
		if r.Failed {
			id = r.ID
		}
	}
	if id == "" {
		t.Fatalf("no failed record among %s", js.stdout)
	}
	one := conctl(t, srv, "", "tasks", kindVPC+"/"+broken, "--id", id, "-o", "json")
	var rec struct {
		Outcome  string `json:"outcome"`
		Terminal bool   `json:"terminal"`
		Error    string `json:"error"`
		Worker   string `json:"worker"`
		Input    struct {
			Spec   map[string]any `json:"spec"`
			Flowed []struct {
				To    string `json:"to"`
				From  string `json:"from"`
				Value any    `json:"value"`
			} `json:"flowed"`
		} `json:"input"`
		Result struct {
			Error struct {
				Message  string `json:"message"`
				Terminal bool   `json:"terminal"`
			} `json:"error"`
		} `json:"result"`
	}
	if one.code != 0 || json.Unmarshal([]byte(one.stdout), &rec) != nil {
		t.Fatalf("conctl tasks --id %s -o json:\n%s", id, one)
	}
	flowed := fmt.Sprint(rec.Input.Flowed)
	if len(rec.Input.Flowed) != 1 || rec.Input.Flowed[0].To != "/account_id" || rec.Input.Flowed[0].Value != accountID {
		t.Errorf("the record's flowed values: %s; want /account_id = %q", flowed, accountID)
	}
	if rec.Outcome != "applied" || !rec.Terminal || rec.Error != msg || rec.Result.Error.Message != msg ||
		!rec.Result.Error.Terminal || rec.Worker == "" {
		t.Errorf("the record: %s; want applied, terminal, the handler's error %q and the worker named", one.stdout, msg)
	}
}
