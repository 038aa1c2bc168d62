{{/* Names, labels and addresses shared by every template. */}}

{{- define "lanes.fullname" -}}
{{- if contains "lanes" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-lanes" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "lanes.labels" -}}
app.kubernetes.io/name: lanes
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of one component: include "lanes.selector" (list . "broker") */}}
{{- define "lanes.selector" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: lanes
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "lanes.componentLabels" -}}
{{ include "lanes.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "lanes.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "lanes.domain" -}}
{{ .Release.Namespace }}.svc.{{ .Values.clusterDomain }}
{{- end -}}

{{/* host:port,... of every controller of the quorum (its StatefulSet's pods, by their stable DNS
names): brokers, coordinators and clients find the active one among them. */}}
{{- define "lanes.controllerAddresses" -}}
{{- $root := . -}}
{{- range $i := until (int .Values.controller.replicas) -}}
{{- if $i }},{{ end -}}
{{ include "lanes.fullname" $root }}-controller-{{ $i }}.{{ include "lanes.fullname" $root }}-controller.{{ include "lanes.domain" $root }}:{{ $root.Values.controller.port }}
{{- end -}}
{{- end -}}

{{/* The quorum's voters, id@host:port,... (controller id = pod ordinal). */}}
{{- define "lanes.controllerVoters" -}}
{{- $root := . -}}
{{- range $i := until (int .Values.controller.replicas) -}}
{{- if $i }},{{ end -}}
{{ $i }}@{{ include "lanes.fullname" $root }}-controller-{{ $i }}.{{ include "lanes.fullname" $root }}-controller.{{ include "lanes.domain" $root }}:{{ $root.Values.controller.port }}
{{- end -}}
{{- end -}}

{{/* host:port clients start from: the bootstrap Service in front of the ready brokers. */}}
{{- define "lanes.bootstrap" -}}
{{ include "lanes.fullname" . }}-bootstrap.{{ include "lanes.domain" . }}:{{ .Values.broker.port }}
{{- end -}}

{{/* Environment every Lanes process gets. */}}
{{- define "lanes.commonEnv" -}}
- name: POD_NAME
  valueFrom: {fieldRef: {fieldPath: metadata.name}}
- name: POD_NAMESPACE
  valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
- name: LANES_LOG_FORMAT
  value: {{ .Values.logFormat | quote }}
{{- end -}}

{{/* The pod-level settings every Lanes pod shares. */}}
{{- define "lanes.podCommon" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end -}}

{{/* A writable /tmp for a read-only root filesystem. */}}
{{- define "lanes.tmpVolume" -}}
- name: tmp
  emptyDir: {sizeLimit: 64Mi}
{{- end -}}

{{/* Pods of one component spread over nodes, preferred or required. */}}
{{- define "lanes.antiAffinity" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
{{- $mode := index . 2 -}}
{{- if eq $mode "hard" }}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- include "lanes.selector" (list $root $component) | nindent 10 }}
{{- else if eq $mode "soft" }}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "lanes.selector" (list $root $component) | nindent 12 }}
{{- end }}
{{- end -}}
