package generate

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	nri "github.com/containerd/nri/pkg/api"
)

// checkMountPropagation checks, for every mount that mounts asks for with
// "rshared" or "rslave" propagation, that its source on the host
// propagates accordingly: a shared mount needs a shared source, a slave
// mount a shared or slave one. The last propagation option of a mount
// counts, as upstream.
func checkMountPropagation(mounts []*nri.Mount) error {
	for _, m := range mounts {
		if _, removed := m.IsMarkedForRemoval(); removed {
			continue
		}
		var accepted []string
		for _, opt := range m.GetOptions() {
			switch opt {
			case "rprivate":
				accepted = nil
			case "rshared":
				accepted = []string{"rshared"}
			case "rslave":
				accepted = []string{"rshared", "rslave"}
			}
		}
		if accepted == nil {
			continue
		}
		prop, err := hostPropagation(m.GetSource())
		if err != nil {
			return fmt.Errorf("mount %q: %w", m.GetDestination(), err)
		}
		if !slices.Contains(accepted, prop) {
			return fmt.Errorf("mount %q: path %q mount propagation is %q, not %q",
				m.GetDestination(), m.GetSource(), prop, strings.Join(accepted, " or "))
		}
	}
	return nil
}

// propagationIn returns the propagation of the mount path lives on, as
// "rshared", "rslave" or "" (private), read from mountinfo, a
// /proc/<pid>/mountinfo table: that of the mount point which is the
// longest parent of path, the last one listed if several are mounted
// there (it hides the others).
func propagationIn(mountinfo io.Reader, path string) (string, error) {
	path = filepath.Clean(path)
	best, bestLen := "", -1
	sc := bufio.NewScanner(mountinfo)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source super
		fields := strings.Fields(sc.Text())
		if len(fields) < 7 {
			continue
		}
		point := unescape(fields[4])
		if !isParent(point, path) || len(point) < bestLen {
			continue
		}
		best, bestLen = "", len(point)
		for _, opt := range fields[6:] {
			if opt == "-" {
				break
			}
			switch {
			case strings.HasPrefix(opt, "shared:"):
				best = "rshared"
			case strings.HasPrefix(opt, "master:") && best == "":
				best = "rslave"
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("reading mount info: %w", err)
	}
	if bestLen < 0 {
		return "", fmt.Errorf("no mount info for %q", path)
	}
	return best, nil
}

// isParent reports whether mount point point is path or one of its
// parent directories.
func isParent(point, path string) bool {
	return point == "/" || path == point || strings.HasPrefix(path, point+"/")
}

// unescape undoes the octal escapes (\040 for a space) of mountinfo.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
