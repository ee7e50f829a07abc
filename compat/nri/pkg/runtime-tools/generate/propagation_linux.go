package generate

import "os"

// hostPropagation returns the propagation of the host mount path lives
// on, from /proc/self/mountinfo.
func hostPropagation(path string) (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	return propagationIn(f, path)
}
