package generate

import (
	"strings"
	"testing"
)

const mountinfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
23 22 0:5 / /proc rw,nosuid - proc proc rw
24 22 0:20 / /srv rw,relatime master:3 - ext4 /dev/sdb1 rw
25 24 0:21 / /srv/private rw,relatime - tmpfs tmpfs rw
26 22 0:22 / /with\040space rw,relatime shared:7 master:2 - tmpfs tmpfs rw
27 22 0:23 / /stacked rw,relatime shared:8 - tmpfs tmpfs rw
28 27 0:24 / /stacked rw,relatime - tmpfs tmpfs rw
`

func TestPropagationIn(t *testing.T) {
	for _, tc := range []struct {
		path, want string
	}{
		{"/", "rshared"},
		{"/usr/lib", "rshared"},
		{"/proc/1", ""},
		{"/srv", "rslave"},
		{"/srv/data/", "rslave"},
		{"/srv/private/x", ""},
		{"/srvfoo", "rshared"}, // not under /srv: path components count
		{"/with space/x", "rshared"},
		{"/stacked/x", ""}, // the last mount on /stacked hides the first
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, err := propagationIn(strings.NewReader(mountinfo), tc.path)
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := propagationIn(strings.NewReader(""), "/x"); err == nil {
		t.Errorf("empty mount table: no error")
	}
}
