package api

import "path"

// EntryPath is what a mount destination or a device path is owned and
// matched by, when merging adjustments and applying them: the cleaned
// path, so that "/data/" and "/data" are one entry.
func EntryPath(p string) string {
	if p == "" {
		return ""
	}
	return path.Clean(p)
}

// NamespaceType returns the canonical name of a Linux namespace type:
// "net" is "network" and "mnt" is "mount", as runtimes accept both.
func NamespaceType(t string) string {
	switch t {
	case "net":
		return "network"
	case "mnt":
		return "mount"
	}
	return t
}
