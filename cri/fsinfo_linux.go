package cri

import (
	"fmt"
	"syscall"
	"time"

	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// filesystemUsage reports the used bytes and inodes of the file system
// holding dir.
func filesystemUsage(dir string) (*criapi.FilesystemUsage, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", dir, err)
	}
	used := (st.Blocks - st.Bfree) * uint64(st.Bsize)
	inodes := st.Files - st.Ffree
	return &criapi.FilesystemUsage{
		Timestamp:  time.Now().UnixNano(),
		FsId:       &criapi.FilesystemIdentifier{Mountpoint: dir},
		UsedBytes:  &criapi.UInt64Value{Value: used},
		InodesUsed: &criapi.UInt64Value{Value: inodes},
	}, nil
}
