//go:build !linux

package cri

func createNetNS(name string) (string, error) { return "", ErrNotSupported }

func deleteNetNS(name string) error { return nil }

func netnsExists(path string) bool { return false }
