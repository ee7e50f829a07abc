package cri

import (
	"context"
	"fmt"

	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageService is the ImageService of a runtime without images: it
// answers what is honest to answer and leaves the rest Unimplemented.
type imageService struct {
	criapi.UnimplementedImageServiceServer
	s *Server
}

var _ criapi.ImageServiceServer = (*imageService)(nil)

// ListImages lists no images.
func (*imageService) ListImages(context.Context, *criapi.ListImagesRequest) (*criapi.ListImagesResponse, error) {
	return &criapi.ListImagesResponse{Images: []*criapi.Image{}}, nil
}

// ImageStatus reports that the image is not present.
func (*imageService) ImageStatus(context.Context, *criapi.ImageStatusRequest) (*criapi.ImageStatusResponse, error) {
	return &criapi.ImageStatusResponse{}, nil
}

// RemoveImage succeeds: the image is not there.
func (*imageService) RemoveImage(context.Context, *criapi.RemoveImageRequest) (*criapi.RemoveImageResponse, error) {
	return &criapi.RemoveImageResponse{}, nil
}

// ImageFsInfo reports the file system of the state directory (see
// WithStateDir), as statfs sees it: used bytes and inodes of the whole
// file system, since nrinetd keeps no images of its own. Without a state
// directory it reports none.
func (i *imageService) ImageFsInfo(context.Context, *criapi.ImageFsInfoRequest) (*criapi.ImageFsInfoResponse, error) {
	rsp := &criapi.ImageFsInfoResponse{ImageFilesystems: []*criapi.FilesystemUsage{}}
	dir := i.s.cfg.stateDir
	if dir == "" {
		return rsp, nil
	}
	fs, err := filesystemUsage(dir)
	if err != nil {
		return nil, toStatus(fmt.Errorf("ImageFsInfo: %w", err))
	}
	rsp.ImageFilesystems = append(rsp.ImageFilesystems, fs)
	return rsp, nil
}
