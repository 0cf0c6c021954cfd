{{/* The labels of every object: the plain install's, and Helm's. */}}
{{- define "nhc-controller.labels" -}}
app.kubernetes.io/name: nhc-controller
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The pods' labels, as the plain install selects them. */}}
{{- define "nhc-controller.selectorLabels" -}}
app.kubernetes.io/name: nhc-controller
{{- end -}}

{{/* The controller's ServiceAccount, as a subject. */}}
{{- define "nhc-controller.subject" -}}
- kind: ServiceAccount
  name: nhc-controller
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/* The image: repository:tag, and @digest when given. */}}
{{- define "nhc-controller.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- with .Values.image.digest }}@{{ . }}{{ end -}}
{{- end -}}

{{/* The controller's flags. */}}
{{- define "nhc-controller.args" -}}
- --leader-elect={{ .Values.leaderElection.enabled }}
{{- if .Values.metrics.enabled }}
- --metrics-bind-address=:{{ .Values.metrics.port }}
{{- else }}
- --metrics-bind-address=0
{{- end }}
- --health-probe-bind-address=:{{ .Values.probesPort }}
- --v={{ .Values.logging.verbosity }}
{{- if ne .Values.logging.format "text" }}
- --logging-format={{ .Values.logging.format }}
{{- end }}
{{- if not .Values.nodeLeases.enabled }}
- --node-leases=false
{{- else if ne .Values.nodeLeases.namespace "medik8s-leases" }}
- --lease-namespace={{ .Values.nodeLeases.namespace }}
{{- end }}
{{- if and .Values.metrics.enabled (not .Values.metrics.secure) }}
- --metrics-secure=false
{{- end }}
{{- if and .Values.metrics.enabled .Values.metrics.tlsSecret }}
- --tls-cert-file=/etc/nhc-controller/tls/tls.crt
- --tls-private-key-file=/etc/nhc-controller/tls/tls.key
{{- end }}
{{- with .Values.extraArgs }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
The objects of a file the plain install shares with the chart (copied into
files/ by hack/update-chart.sh), with the chart's labels and the release's
namespace: one definition of the guards' rules and the alerts.
*/}}
{{- define "nhc-controller.shared" -}}
{{- $root := .root -}}
{{- range $doc := regexSplit "(?m)^---$" ($root.Files.Get .file) -1 }}
{{- $object := fromYaml $doc }}
{{- if $object }}
---
apiVersion: {{ $object.apiVersion }}
kind: {{ $object.kind }}
metadata:
  name: {{ $object.metadata.name }}
  {{- if $object.metadata.namespace }}
  namespace: {{ $root.Release.Namespace }}
  {{- end }}
  labels:
    {{- include "nhc-controller.labels" $root | nindent 4 }}
    {{- with $.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  {{- toYaml $object.spec | nindent 2 }}
{{- end }}
{{- end }}
{{- end -}}
