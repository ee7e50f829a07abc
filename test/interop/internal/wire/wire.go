// Package wire holds what the interop helper programs and the tests
// exchange: the JSON record a recplugin writes per request, the line a
// driver prints per result, and protojson encoding shared by both builds
// (it works on any proto.Message, nrinet's or upstream's).
package wire

import (
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Record is one request a recplugin received.
type Record struct {
	Event      string          `json:"event"`
	Plugin     string          `json:"plugin,omitempty"`
	Pod        json.RawMessage `json:"pod,omitempty"`
	Container  json.RawMessage `json:"container,omitempty"`
	Resources  json.RawMessage `json:"resources,omitempty"`
	Overhead   json.RawMessage `json:"overhead,omitempty"`
	Config     string          `json:"config,omitempty"`
	Runtime    string          `json:"runtime,omitempty"`
	Version    string          `json:"version,omitempty"`
	RegTimeout int64           `json:"registrationTimeoutMs,omitempty"`
	ReqTimeout int64           `json:"requestTimeoutMs,omitempty"`
	Pods       int             `json:"pods,omitempty"`
	Containers int             `json:"containers,omitempty"`
	LastPodID  string          `json:"lastPodId,omitempty"`
	LastCtrID  string          `json:"lastContainerId,omitempty"`
}

// Line is one line a driver prints.
type Line struct {
	Step     string          `json:"step"`
	Event    string          `json:"event,omitempty"`
	Error    string          `json:"error,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
	Plugin   string          `json:"plugin,omitempty"`
}

// JSON encodes m with protojson; nil or invalid messages give nil.
func JSON(m proto.Message) json.RawMessage {
	if m == nil || !m.ProtoReflect().IsValid() {
		return nil
	}
	b, err := protojson.Marshal(m)
	if err != nil {
		panic(err) // only for messages that cannot be valid protobuf
	}
	return b
}
