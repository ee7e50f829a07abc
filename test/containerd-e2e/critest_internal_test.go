package containerde2e

import "testing"

func TestMarkShimRaces(t *testing.T) {
	const (
		id    = "a77504f7500d01b8683851e59a30a245979d92ead02f816e7d8e1330d9dfbfed"
		other = "0000000000000000000000000000000000000000000000000000000000000001"
		race  = `level=error msg="encountered an error cleaning up failed sandbox \"` + id + `\", marking sandbox state as SANDBOX_UNKNOWN" error="failed to delete task: ttrpc: closed"`
	)
	for _, tc := range []struct {
		name  string
		r     specResult
		log   string
		wantR string
	}{
		{"the race", specResult{State: "failed", Message: "sandbox " + id + " MUST be cleaned up after a failed RunPodSandbox"}, race, id},
		{"no race logged", specResult{State: "failed", Message: "sandbox " + id + " MUST be cleaned up after a failed RunPodSandbox"}, "", ""},
		{"another sandbox", specResult{State: "failed", Message: "sandbox " + other + " MUST be cleaned up after a failed RunPodSandbox"}, race, ""},
		{"no sandbox named", specResult{State: "failed", Message: "timed out"}, race, ""},
		{"passed", specResult{State: "passed", Message: id}, race, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := []specResult{tc.r}
			markShimRaces(res, tc.log)
			if res[0].ShimRace != tc.wantR {
				t.Errorf("ShimRace = %q, want %q", res[0].ShimRace, tc.wantR)
			}
		})
	}
}
