package testutil

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"
)

// HTTPGet gets url and returns the status code and the body; a request
// that fails (no answer within 10 s, connection refused) fails the test.
func HTTPGet(t testing.TB, url string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// loggedAddress matches the address attribute of a slog text record.
var loggedAddress = regexp.MustCompile(`address=(\S+)`)

// LoggedAddress waits until a record of a slog text log in logs has the
// message msg and returns its address attribute (as a process that
// listens on port 0 logs where it listens). It fails the test after
// patience or once exited, if not nil, is closed.
func LoggedAddress(t testing.TB, logs *LogBuffer, msg string, patience time.Duration, exited <-chan struct{}) string {
	t.Helper()
	quoted := regexp.MustCompile(`msg="?` + regexp.QuoteMeta(msg) + `"?\s.*`)
	var addr string
	err := Poll(patience, 10*time.Millisecond, func() error {
		if line := quoted.FindString(logs.String()); line != "" {
			if m := loggedAddress.FindStringSubmatch(line); m != nil {
				addr = m[1]
				return nil
			}
		}
		select {
		case <-exited:
			return Abort(fmt.Errorf("the process exited before logging %q", msg))
		default:
		}
		return fmt.Errorf("no %q with an address logged", msg)
	})
	if err != nil {
		t.Fatalf("%v:\n%s", err, logs)
	}
	return addr
}
