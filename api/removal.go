package api

import "strings"

// MarkForRemoval returns key marked for removal: "-key". An adjustment
// entry whose key is marked removes that entry from the container.
func MarkForRemoval(key string) string { return "-" + key }

// IsMarkedForRemoval returns key without its removal marker and whether it
// had one.
func IsMarkedForRemoval(key string) (string, bool) { return strings.CutPrefix(key, "-") }

// ClearRemovalMarker returns key without its removal marker, if any.
func ClearRemovalMarker(key string) string { return strings.TrimPrefix(key, "-") }
