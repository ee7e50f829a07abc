package api

import (
	"github.com/planetscale/vtprotobuf/protohelpers"

	nrinet "github.com/nrinet/nrinet/api"
)

// File_pkg_api_api_proto is the descriptor of the NRI schema, the file
// that declares every message of this package.
var File_pkg_api_api_proto = (&nrinet.Empty{}).ProtoReflect().Descriptor().ParentFile() //nolint:revive // upstream's generated name

// Errors of the generated (vtprotobuf) decoders.
var (
	// ErrInvalidLength is returned when a length in a message is negative.
	ErrInvalidLength = protohelpers.ErrInvalidLength
	// ErrIntOverflow is returned when a varint in a message overflows 64 bits.
	ErrIntOverflow = protohelpers.ErrIntOverflow
	// ErrUnexpectedEndOfGroup is returned for a group end without a start.
	ErrUnexpectedEndOfGroup = protohelpers.ErrUnexpectedEndOfGroup
)
