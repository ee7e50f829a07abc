{{/*
The names the objects share with the kustomize base (deploy/base): they do
not depend on the release, so that the chart and the base make the same
objects, and one cluster has one pod network.
*/}}

{{/* nrinet.namespace: where everything of nrinet runs (the base's). */}}
{{- define "nrinet.namespace" -}}
nrinet-system
{{- end }}

{{/*
nrinet.name: the plugin, its DaemonSet, container and ServiceAccount:
.Values.mode, nri-podnet or nri-cni. Anything else fails the render, even
with --skip-schema-validation.
*/}}
{{- define "nrinet.name" -}}
{{- if not (has .Values.mode (list "nri-podnet" "nri-cni")) -}}
{{- fail (printf "mode %q: want nri-podnet or nri-cni" (toString .Values.mode)) -}}
{{- end -}}
{{- .Values.mode -}}
{{- end }}

{{/* nrinet.podnet: "true" in mode nri-podnet, "" in mode nri-cni. */}}
{{- define "nrinet.podnet" -}}
{{- if eq (include "nrinet.name" .) "nri-podnet" }}true{{ end -}}
{{- end }}

{{/*
nrinet.nodeSelector: .Values.nodeSelector and, unless podNetworkLabel is
empty, the opt-in label: <podNetworkLabel>: podnet (nri-podnet) or cni
(nri-cni), the network plugin the node's runtime requires. YAML, {} when
empty.
*/}}
{{- define "nrinet.nodeSelector" -}}
{{- $selector := deepCopy (.Values.nodeSelector | default dict) -}}
{{- with .Values.podNetworkLabel -}}
{{- $_ := set $selector . (ternary "podnet" "cni" (eq (include "nrinet.podnet" $) "true")) -}}
{{- end -}}
{{- toYaml $selector -}}
{{- end }}

{{/* nrinet.labels: every object's labels. */}}
{{- define "nrinet.labels" -}}
app.kubernetes.io/name: {{ include "nrinet.name" . }}
app.kubernetes.io/part-of: nrinet
{{- end }}

{{/* nrinet.image: repository:tag, by default make image's name and the appVersion. */}}
{{- define "nrinet.image" -}}
{{- $repository := .Values.image.repository | default (printf "localhost/nrinet/%s" (include "nrinet.name" .)) -}}
{{- printf "%s:%s" $repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end }}

{{/* nrinet.healthPort: .Values.healthPort, or the mode's (9465, 9466). */}}
{{- define "nrinet.healthPort" -}}
{{- if .Values.healthPort }}{{ int .Values.healthPort }}{{ else if include "nrinet.podnet" . }}9465{{ else }}9466{{ end -}}
{{- end }}

{{/*
nrinet.podnetConfig: nri-podnet's config.json, .Values.config with the
state volume's stateDir. noBridgeNetfilter with networkPolicy fails, as
nri-podnet would at start: pod-to-pod traffic of a node would bypass the
policies.
*/}}
{{- define "nrinet.podnetConfig" -}}
{{- if and .Values.networkPolicy .Values.config.noBridgeNetfilter -}}
{{- fail "config.noBridgeNetfilter: true turns NetworkPolicy enforcement between a node's pods off; remove it, or set networkPolicy=false" -}}
{{- end -}}
{{- toPrettyJson (merge (dict "stateDir" "/var/lib/nri-podnet") (deepCopy .Values.config)) -}}
{{- end }}

{{/*
nrinet.checkExtraEnv fails if .Values.extraEnv names a variable the chart
sets, which would be there twice: NODE_NAME, and in mode nri-podnet
CLUSTER_CIDR and GOMEMLIMIT (goMemLimit).
*/}}
{{- define "nrinet.checkExtraEnv" -}}
{{- $chart := list "NODE_NAME" -}}
{{- if include "nrinet.podnet" . -}}
{{- $chart = concat $chart (list "CLUSTER_CIDR") -}}
{{- if .Values.goMemLimit }}{{ $chart = append $chart "GOMEMLIMIT" }}{{ end -}}
{{- end -}}
{{- range .Values.extraEnv -}}
{{- if has .name $chart -}}
{{- fail (printf "extraEnv %s: the chart sets it%s" .name (ternary "; set goMemLimit instead" "" (eq .name "GOMEMLIMIT"))) -}}
{{- end -}}
{{- end -}}
{{- end }}
