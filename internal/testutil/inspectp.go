package testutil

import (
	"encoding/json"
	"fmt"
)

// PodStatus is what the suites read of `crictl inspectp -o json`: the
// pod's state and addresses as CRI reports them, and what a runtime in
// network mode nri adds to its verbose info (networkMode, nriNetwork).
type PodStatus struct {
	Status struct {
		ID       string `json:"id"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		State   string `json:"state"`
		Network struct {
			IP            string `json:"ip"`
			AdditionalIPs []struct {
				IP string `json:"ip"`
			} `json:"additionalIps"`
		} `json:"network"`
	} `json:"status"`
	NetworkMode string          `json:"networkMode"`
	NRINetwork  json.RawMessage `json:"nriNetwork"`
	// Info is the verbose info's "info" key (containerd's and nrinetd's
	// sandbox information), as the runtime gave it.
	Info json.RawMessage `json:"info"`
}

// ParsePodStatus decodes the output of `crictl inspectp -o json`.
func ParsePodStatus(out []byte) (PodStatus, error) {
	var s PodStatus
	if err := json.Unmarshal(out, &s); err != nil {
		return s, fmt.Errorf("crictl inspectp: %w", err)
	}
	return s, nil
}

// RuntimeStatus is what the suites read of `crictl info -o json`: the
// runtime's conditions (RuntimeReady, NetworkReady).
type RuntimeStatus struct {
	Status struct {
		Conditions []struct {
			Type    string `json:"type"`
			Status  bool   `json:"status"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"conditions"`
	} `json:"status"`
}

// ParseRuntimeStatus decodes the output of `crictl info -o json`.
func ParseRuntimeStatus(out []byte) (RuntimeStatus, error) {
	var s RuntimeStatus
	if err := json.Unmarshal(out, &s); err != nil {
		return s, fmt.Errorf("crictl info: %w", err)
	}
	return s, nil
}

// Condition returns the condition typ (e.g. "NetworkReady"); found is
// false if the runtime reports no such condition.
func (s RuntimeStatus) Condition(typ string) (status bool, reason, message string, found bool) {
	for _, c := range s.Status.Conditions {
		if c.Type == typ {
			return c.Status, c.Reason, c.Message, true
		}
	}
	return false, "", "", false
}

// IPs returns the pod's addresses, the primary one first.
func (s PodStatus) IPs() []string {
	var out []string
	if s.Status.Network.IP != "" {
		out = append(out, s.Status.Network.IP)
	}
	for _, a := range s.Status.Network.AdditionalIPs {
		out = append(out, a.IP)
	}
	return out
}

// NRIRecord is what the suites read of a pod's NRI network record
// (protobuf JSON of nrinet's PodNetworkRecord).
type NRIRecord struct {
	Network struct {
		IPs []string `json:"ips"`
		// Interfaces are the typed interfaces of the pod's network
		// (eth0, and secondary ones such as net1).
		Interfaces []NRIInterface `json:"interfaces"`
		// Info holds the network's untyped keys.
		Info map[string]string `json:"info"`
	} `json:"network"`
	// Owners maps each part ("ips/ipv4", "interface/eth0", ...) to the
	// plugin that set it.
	Owners map[string]string `json:"owners"`
	// Stale maps the plugins whose part could not be refreshed to why.
	Stale map[string]string `json:"stale"`
}

// NRIInterface is one interface of a pod's NRI network record.
type NRIInterface struct {
	Name      string   `json:"name"`
	MAC       string   `json:"mac"`
	Addresses []string `json:"addresses"`
}

// Record decodes the NRI record in the verbose info; false if there is
// none. crictl embeds an info value that is JSON as an object, else as a
// string.
func (s PodStatus) Record() (NRIRecord, bool, error) {
	var r NRIRecord
	raw := s.NRINetwork
	if len(raw) == 0 {
		return r, false, nil
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		raw = json.RawMessage(str)
	}
	return r, true, json.Unmarshal(raw, &r)
}
