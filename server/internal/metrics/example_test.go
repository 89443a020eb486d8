package metrics_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/convergehq/converge/server/internal/metrics"
)

func ExampleMetrics() {
	m := metrics.New()
	m.Claimed("greeting", 2)
	m.Completed("greeting", metrics.Success, "")
	m.Completed("greeting", metrics.Transient, "QuotaExceeded")

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, metrics.Path, nil))
	for line := range strings.SplitSeq(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, `converge_tasks_claimed_total{`) ||
			strings.HasPrefix(line, `converge_tasks_completed_total{kind="greeting",outcome="success"`) ||
			strings.Contains(line, `reason="QuotaExceeded"`) {
			fmt.Println(line)
		}
	}
	// Output:
	// converge_tasks_claimed_total{kind="greeting"} 2
	// converge_tasks_completed_total{kind="greeting",outcome="success",reason=""} 1
	// converge_tasks_completed_total{kind="greeting",outcome="transient",reason="QuotaExceeded"} 1
}
