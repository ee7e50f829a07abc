package testutil

import "encoding/json"

// PodStatus is what the suites read of `crictl inspectp -o json`: the
// pod's state and addresses as CRI reports them, and what a runtime in
// network mode nri adds to its verbose info (networkMode, nriNetwork).
type PodStatus struct {
	Status struct {
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
	} `json:"network"`
	// Owners maps each part ("ips/ipv4", "interface/eth0", ...) to the
	// plugin that set it.
	Owners map[string]string `json:"owners"`
	// Stale maps the plugins whose part could not be refreshed to why.
	Stale map[string]string `json:"stale"`
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
