package conctl

import (
	"fmt"
	"strings"
)

// printPlan prints a --dry-run plan as a table: one line per resource,
// then a count.
func (a *app) printPlan(rep *syncReport) {
	if a.output != formatTable {
		return
	}
	counts := map[string]int{}
	for _, it := range rep.Resources {
		counts[it.Action]++
		line := it.Action
		switch it.Action {
		case syncUpdate:
			line += " (" + strings.Join(it.Changes, ", ") + ")"
		case syncKeep:
			line = keptResult
		case syncDelete:
			if it.deleting {
				line += " (already deleting)"
			}
		}
		fmt.Fprintf(a.stdout, "resource %s %s\n", it.id(), line)
	}
	parts := []string{
		fmt.Sprintf("%d to create", counts[syncCreate]),
		fmt.Sprintf("%d to update", counts[syncUpdate]),
		fmt.Sprintf("%d unchanged", counts[syncUnchanged]),
	}
	if rep.Prune {
		parts = append(parts, fmt.Sprintf("%d to delete", counts[syncDelete]), fmt.Sprintf("%d kept", counts[syncKeep]))
	}
	fmt.Fprintf(a.stdout, "dry run of app %s: %s; nothing was changed\n", rep.App, strings.Join(parts, ", "))
	a.printUndeclared(rep)
}

// printSummary ends a table report with a count of results.
func (a *app) printSummary(rep *syncReport) {
	if a.output != formatTable {
		return
	}
	counts := map[string]int{}
	var order []string
	for _, it := range rep.Resources {
		r := it.Result
		if r == "deleting" {
			r = "pruned"
		}
		if counts[r] == 0 {
			order = append(order, r)
		}
		counts[r]++
	}
	parts := make([]string, 0, len(order))
	for _, r := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[r], r))
	}
	if len(parts) == 0 {
		parts = append(parts, "no resources")
	}
	fmt.Fprintf(a.stdout, "synced app %s: %s\n", rep.App, strings.Join(parts, ", "))
	a.printUndeclared(rep)
}

// printUndeclared tells, without --prune, that the app has resources the
// tree no longer declares.
func (a *app) printUndeclared(rep *syncReport) {
	if rep.Undeclared > 0 {
		fmt.Fprintf(a.stdout, "%d resources of app %s are not in the tree; sync --prune deletes them\n", rep.Undeclared, rep.App)
	}
}

// printSyncReport prints the whole report as JSON or YAML.
func (a *app) printSyncReport(rep *syncReport) error {
	if a.output == formatTable {
		return nil
	}
	return a.printValue(rep)
}
