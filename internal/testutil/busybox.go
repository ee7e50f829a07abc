package testutil

import (
	"debug/elf"
	"fmt"
)

// StaticBusybox returns the path of a statically linked busybox (Debian's
// busybox-static), which images without a C library can carry: one with an
// ELF interpreter is refused.
func StaticBusybox() (string, error) {
	const need = "a static busybox is needed (Debian package busybox-static)"
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		defer f.Close()
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				return "", fmt.Errorf("%s is linked dynamically: %s", p, need)
			}
		}
		return p, nil
	}
	return "", fmt.Errorf("/bin/busybox not found: %s", need)
}
