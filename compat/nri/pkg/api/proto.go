package api

import (
	"github.com/planetscale/vtprotobuf/protohelpers"

	nrinet "github.com/nrinet/nrinet/api"
)

// File_pkg_api_api_proto is the descriptor of the NRI schema, the file
// that declares every message of this package; it is registered, as
// upstream's, under the path pkg/api/api.proto.
var File_pkg_api_api_proto = nrinet.File_pkg_api_api_proto //nolint:revive // upstream's generated name

// Errors of the generated (vtprotobuf) decoders.
var (
	// ErrInvalidLength is returned when a length in a message is negative.
	ErrInvalidLength = protohelpers.ErrInvalidLength
	// ErrIntOverflow is returned when a varint in a message overflows 64 bits.
	ErrIntOverflow = protohelpers.ErrIntOverflow
	// ErrUnexpectedEndOfGroup is returned for a group end without a start.
	ErrUnexpectedEndOfGroup = protohelpers.ErrUnexpectedEndOfGroup
)
