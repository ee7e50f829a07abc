// Package wire holds what the interop helper programs and the tests
// exchange: the JSON record a recplugin writes per request, the script it
// answers from, the line a driver prints per result, and protojson
// encoding shared by both builds (it works on any proto.Message, nrinet's
// or upstream's).
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
	Error      string          `json:"error,omitempty"`
	Failed     int             `json:"failed,omitempty"`
}

// Script is what a scripted recplugin answers, by container ID. Each part
// is protojson of the message named, decoded by the plugin into its own
// build's API types (both builds share the schema).
type Script map[string]ScriptEntry

// ScriptEntry is a recplugin's script for one container.
type ScriptEntry struct {
	// Create is the CreateContainerResponse to answer CreateContainer
	// with: adjustment, updates of other containers, evictions.
	Create json.RawMessage `json:"create,omitempty"`
	// Update is the UpdateContainerResponse to answer UpdateContainer
	// with: updates, evictions.
	Update json.RawMessage `json:"update,omitempty"`
	// Unsolicited is an UpdateContainersRequest the plugin sends the
	// runtime, once it answered CreateContainer; it records the outcome
	// as an "UpdateContainers" record.
	Unsolicited json.RawMessage `json:"unsolicited,omitempty"`
}

// Line is one line a driver prints.
type Line struct {
	Step     string          `json:"step"`
	Event    string          `json:"event,omitempty"`
	Error    string          `json:"error,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
	Plugin   string          `json:"plugin,omitempty"`
	// Proto is Response in the protobuf wire encoding, so a test can decode
	// an upstream message into nrinet's types field for field.
	Proto []byte `json:"proto,omitempty"`
	// NilUpdates lists the positions of nil entries in the response's
	// update list (they encode as empty messages).
	NilUpdates []int `json:"nilUpdates,omitempty"`
}

// Binary encodes m in the protobuf wire format; nil or invalid messages
// give nil.
func Binary(m proto.Message) []byte {
	if m == nil || !m.ProtoReflect().IsValid() {
		return nil
	}
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
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
