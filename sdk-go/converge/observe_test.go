package converge

import (
	"errors"
	"io"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func TestObserveTaskCarriesImport(t *testing.T) {
	task := newTask(&convergev1.Task{Trigger: "observe", Resource: &convergev1.TaskResource{Name: "vpc", ImportId: "vpc-0abc"}})
	if !task.Observing() || task.ImportID != "vpc-0abc" {
		t.Fatalf("observing %v, import id %q; want an observe task importing vpc-0abc", task.Observing(), task.ImportID)
	}
	if newTask(&convergev1.Task{Trigger: "specChange"}).Observing() {
		t.Fatal("a specChange task reports it is observing")
	}
}

func TestImportNotFound(t *testing.T) {
	err := ImportNotFound("vpc-0abc", io.EOF)
	if !IsTerminal(err) || ReasonOf(err) != ReasonImportNotFound || !errors.Is(err, io.EOF) {
		t.Fatalf("%v: terminal %v, reason %q; want terminal ImportNotFound wrapping the detail", err, IsTerminal(err), ReasonOf(err))
	}
	if !strings.Contains(err.Error(), `"vpc-0abc"`) {
		t.Fatalf("%q does not name the id", err)
	}
	if msg := ImportNotFound("i-1", nil).Error(); msg != `import: no object with id "i-1" exists` {
		t.Fatalf("without detail: %q", msg)
	}
}
