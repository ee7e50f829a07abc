package runtime

import "github.com/nrinet/nrinet/api"

// Every message to a plugin that carries pods goes through view: each
// request and event in rpc, the pods of Synchronize in synchronize. A
// plugin that did not answer Configure with the pod network extension (one
// built on upstream's stub, say) is sent pods without the extension's
// fields (port_mappings, dns_config): it never sees data that only the
// extension defines.

// view returns req as the plugin may see it: req itself for a plugin that
// negotiated the pod network extension, else api.ClassicView(req). req is
// never modified.
func (p *plugin) view(req api.VTMessage) api.VTMessage {
	if p.netExt.Load() != 0 {
		return req
	}
	return api.ClassicView(req)
}

// viewPods returns pods as the plugin may see them (see view); the
// caller's slice and pods are not modified.
func (p *plugin) viewPods(pods []*api.PodSandbox) []*api.PodSandbox {
	if p.netExt.Load() != 0 {
		return pods
	}
	var out []*api.PodSandbox
	for i, pod := range pods {
		if !pod.HasExtensionFields() {
			if out != nil {
				out = append(out, pod)
			}
			continue
		}
		if out == nil {
			out = make([]*api.PodSandbox, i, len(pods))
			copy(out, pods[:i])
		}
		out = append(out, pod.WithoutExtensionFields())
	}
	if out == nil {
		return pods
	}
	return out
}
