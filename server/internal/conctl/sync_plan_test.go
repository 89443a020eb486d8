package conctl

import (
	"slices"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// TestSyncSeesPolicyAndImport: a document naming another management
// policy or import id is an update; one leaving them out keeps the
// resource's, as apply does, so it changes nothing.
func TestSyncSeesPolicyAndImport(t *testing.T) {
	have := &convergev1.Resource{KindVersion: 1, ManagementPolicy: "observe", Import: &convergev1.ResourceImport{Id: "vpc-1"}}
	if got := resourceChanges(have, &convergev1.ApplyResourceRequest{KindVersion: 1}); len(got) != 0 {
		t.Errorf("a document naming neither: changes %v; want none", got)
	}
	got := resourceChanges(have, &convergev1.ApplyResourceRequest{KindVersion: 1, ManagementPolicy: "full",
		Import: &convergev1.ResourceImport{Id: "vpc-2"}})
	if !slices.Equal(got, []string{"management_policy", "import"}) {
		t.Errorf("a document naming both anew: changes %v", got)
	}
}
