package containerde2e

import "testing"

func TestShimRaceLeftSandbox(t *testing.T) {
	const id = "96973d9bd0f1"
	for _, tc := range []struct {
		name, log string
		want      bool
	}{
		{"the race", `level=error msg="encountered an error cleaning up failed sandbox \"96973d9bd0f1\", marking sandbox state as SANDBOX_UNKNOWN" error="failed to delete sandbox task \"96973d9bd0f1\": failed to stop sandbox: failed to delete task: ttrpc: closed"`, true},
		{"another sandbox", `level=error msg="encountered an error cleaning up failed sandbox \"0123\"" error="failed to delete task: ttrpc: closed"`, false},
		{"another error", `level=error msg="encountered an error cleaning up failed sandbox \"96973d9bd0f1\"" error="failed to destroy network"`, false},
		{"nothing", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := shimRaceLeftSandbox(tc.log, id); got != tc.want {
				t.Errorf("shimRaceLeftSandbox = %v, want %v", got, tc.want)
			}
		})
	}
}
