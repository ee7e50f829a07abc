//go:build !linux

package cri

import criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

func filesystemUsage(dir string) (*criapi.FilesystemUsage, error) { return nil, ErrNotSupported }
