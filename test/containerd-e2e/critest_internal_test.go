package containerde2e

import (
	"testing"

	"github.com/nrinet/nrinet/internal/critest"
)

func TestMarkShimRaces(t *testing.T) {
	const (
		id    = "a77504f7500d01b8683851e59a30a245979d92ead02f816e7d8e1330d9dfbfed"
		other = "0000000000000000000000000000000000000000000000000000000000000001"
		race  = `level=error msg="encountered an error cleaning up failed sandbox \"` + id + `\", marking sandbox state as SANDBOX_UNKNOWN" error="failed to delete task: ttrpc: closed"`
	)
	for _, tc := range []struct {
		name  string
		r     critest.Spec
		log   string
		wantR string
	}{
		{"the race", critest.Spec{State: "failed", Message: "sandbox " + id + " MUST be cleaned up after a failed RunPodSandbox"}, race, shimRaceExcuse(id)},
		{"no race logged", critest.Spec{State: "failed", Message: "sandbox " + id + " MUST be cleaned up after a failed RunPodSandbox"}, "", ""},
		{"another sandbox", critest.Spec{State: "failed", Message: "sandbox " + other + " MUST be cleaned up after a failed RunPodSandbox"}, race, ""},
		{"no sandbox named", critest.Spec{State: "failed", Message: "timed out"}, race, ""},
		{"passed", critest.Spec{State: "passed", Message: id}, race, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := []critest.Spec{tc.r}
			markShimRaces(res, tc.log)
			if res[0].Excused != tc.wantR {
				t.Errorf("Excused = %q, want %q", res[0].Excused, tc.wantR)
			}
		})
	}
}
