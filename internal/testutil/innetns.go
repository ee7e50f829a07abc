package testutil

import (
	"os"

	"github.com/nrinet/nrinet/internal/nsexec"
)

// InNetNS runs f on a thread in the network namespace at path; sockets f
// opens stay in that namespace (nsexec.Do).
func InNetNS(path string, f func() error) error {
	target, err := os.Open(path)
	if err != nil {
		return err
	}
	defer target.Close()
	return nsexec.Do(int(target.Fd()), f)
}
