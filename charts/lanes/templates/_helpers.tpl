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

{{/* host:port,... of every controller's internal listener (its StatefulSet's pods, by their
stable DNS names): brokers and coordinators find the active one among them. */}}
{{- define "lanes.controllerAddresses" -}}
{{- $root := . -}}
{{- range $i := until (int .Values.controller.replicas) -}}
{{- if $i }},{{ end -}}
{{ include "lanes.fullname" $root }}-controller-{{ $i }}.{{ include "lanes.fullname" $root }}-controller.{{ include "lanes.domain" $root }}:{{ $root.Values.controller.internalPort }}
{{- end -}}
{{- end -}}

{{/* The quorum's voters, id@host:port,... of their internal listeners (controller id = pod ordinal). */}}
{{- define "lanes.controllerVoters" -}}
{{- $root := . -}}
{{- range $i := until (int .Values.controller.replicas) -}}
{{- if $i }},{{ end -}}
{{ $i }}@{{ include "lanes.fullname" $root }}-controller-{{ $i }}.{{ include "lanes.fullname" $root }}-controller.{{ include "lanes.domain" $root }}:{{ $root.Values.controller.internalPort }}
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
- name: LANES_MAX_CALLS_PER_ADDRESS
  value: {{ .Values.security.maxCallsPerAddress | quote }}
- name: LANES_MAX_CONNECTIONS_PER_ADDRESS
  value: {{ .Values.security.maxConnectionsPerAddress | quote }}
- name: LANES_METRICS_NAMED_SERIES
  value: {{ ternary "on" "off" .Values.monitoring.namedSeries | quote }}
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

{{/* A node's security flags: include "lanes.nodeSecurityArgs" (list . "broker" "$(( ${POD_NAME##*-} + 1 ))")
(the node's id as a shell expression); its certificate is <kind>-<id>.crt in /etc/lanes/tls. */}}
{{- define "lanes.nodeSecurityArgs" -}}
{{- $root := index . 0 -}}
{{- $kind := index . 1 -}}
{{- $id := index . 2 -}}
{{- if $root.Values.security.enabled -}}
--tls-ca /etc/lanes/tls/ca.crt --tls-cert "/etc/lanes/tls/{{ $kind }}-{{ $id }}.crt" --tls-key "/etc/lanes/tls/{{ $kind }}-{{ $id }}.key" --tls-client-auth none --auth required --super-users "User:{{ $root.Values.security.admin.user }}" --metrics-token-file /etc/lanes/metrics/token
{{- if $root.Values.security.certificateListener.enabled }} --certificate-port {{ (index $root.Values $kind).certificatePort }} --tls-client-ca /etc/lanes/clients-ca/ca.crt{{ end }}
{{- with $root.Values.security.oauth }}{{ if .issuer }} --oauth-issuer {{ .issuer | quote }} --oauth-audience {{ required "security.oauth.audience is needed with an issuer" .audience | quote }} --oauth-jwks {{ required "security.oauth.jwksUri is needed with an issuer" .jwksUri | quote }} --oauth-principal-claim {{ .principalClaim | default "sub" | quote }}{{ end }}{{ end }}
{{- end -}}
{{- end -}}

{{/* The Secret holding the admin user's password (key `password`). */}}
{{- define "lanes.adminSecret" -}}
{{ .Values.security.admin.existingSecret | default (printf "%s-admin" (include "lanes.fullname" .)) }}
{{- end -}}

{{/* A node's certificates, mounted read-only: include "lanes.nodeTlsMount" . */}}
{{- define "lanes.nodeTlsMount" -}}
{{- if .Values.security.enabled }}
- name: tls
  mountPath: /etc/lanes/tls
  readOnly: true
- name: metrics-token
  mountPath: /etc/lanes/metrics
  readOnly: true
{{- if .Values.security.certificateListener.enabled }}
- name: clients-ca
  mountPath: /etc/lanes/clients-ca
  readOnly: true
{{- end }}
{{- end }}
{{- end -}}

{{/* The names one node's certificate holds: its pod's stable DNS name, the Services clients
dial (the headless Service of its kind; the bootstrap Service for brokers) and localhost, as a
JSON list: include "lanes.nodeNames" (list . "broker" ordinal) | fromJsonArray */}}
{{- define "lanes.nodeNames" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $ordinal := index . 2 -}}
{{- $fullname := include "lanes.fullname" $root -}}
{{- $domain := include "lanes.domain" $root -}}
{{- $service := printf "%s-%s" $fullname $name -}}
{{- $names := list (printf "%s-%s-%d.%s.%s" $fullname $name (int $ordinal) $service $domain) (printf "%s.%s" $service $domain) $service "localhost" -}}
{{- if eq $name "broker" -}}
{{- $bootstrap := printf "%s-bootstrap" $fullname -}}
{{- $names = concat $names (list $bootstrap (printf "%s.%s" $bootstrap $root.Release.Namespace) (printf "%s.%s" $bootstrap $domain)) -}}
{{- end -}}
{{- toJson $names -}}
{{- end -}}

{{/* The certificates of one kind of node: include "lanes.nodeTlsVolume" (list . "broker").
`tls-kind`, mounted by the node-certificate sidecar only: files ca.crt and <kind>-<id>.crt/.key
of every node of the kind (the chart's Secret of that kind, or, with cert-manager, each node's
Secret projected into those names). `tls`, in memory: the pod's own three files, which the
sidecar copies there and the node's container reads. */}}
{{- define "lanes.nodeTlsVolume" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- if $root.Values.security.enabled }}
{{- $fullname := include "lanes.fullname" $root -}}
- name: tls
  emptyDir: {medium: Memory, sizeLimit: 1Mi}
{{- if $root.Values.security.certManager.enabled }}
{{- $first := ternary 0 1 (eq $name "controller") }}
{{- $replicas := int (index $root.Values $name).replicas }}
- name: tls-kind
  projected:
    defaultMode: 0440
    sources:
      - configMap:
          name: {{ $fullname }}-ca
          items: [{key: ca.crt, path: ca.crt}]
      {{- range $ordinal := until $replicas }}
      {{- $id := add $ordinal $first }}
      # optional: a pod waits for its own certificate only (its sidecar), not for its whole kind's
      - secret:
          name: {{ $fullname }}-{{ $name }}-{{ $id }}-tls
          optional: true
          items:
            - {key: tls.crt, path: {{ $name }}-{{ $id }}.crt}
            - {key: tls.key, path: {{ $name }}-{{ $id }}.key}
      {{- end }}
{{- else }}
- name: tls-kind
  secret:
    secretName: {{ $fullname }}-{{ $name }}-tls
    defaultMode: 0440
{{- end }}
# The bearer token a scrape of /metrics gives (the PodMonitor's too).
- name: metrics-token
  secret:
    secretName: {{ $fullname }}-metrics
    defaultMode: 0440
{{- if $root.Values.security.certificateListener.enabled }}
# The clients' CA's certificate (not its key): the certificate listener trusts it.
- name: clients-ca
  configMap:
    name: {{ $fullname }}-clients-ca
{{- end }}
{{- end }}
{{- end -}}

{{/* The sidecar that gives a node's container its own certificate only (lanes_operator.node_certificate):
a native sidecar (an init container that keeps running; Kubernetes 1.29), started before the
node's container once its first copy is whole: include "lanes.nodeCertificateSidecar" (list . "broker" 1),
the last argument the node id of ordinal 0. */}}
{{- define "lanes.nodeCertificateSidecar" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $first := index . 2 -}}
{{- if $root.Values.security.enabled }}
- name: node-certificate
  image: {{ include "lanes.image" $root }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  restartPolicy: Always
  command:
    - python
    - -m
    - lanes_operator.node_certificate
    - --pod-name=$(POD_NAME)
    - --kind={{ $name }}
    - --first-id={{ $first }}
    - --source=/etc/lanes/tls-kind
    - --target=/etc/lanes/tls
  env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
  startupProbe:
    exec:
      command: [test, -f, /etc/lanes/tls/ca.crt]
    periodSeconds: 1
    failureThreshold: 600
  resources:
    requests: {cpu: 5m, memory: 32Mi}
    limits: {memory: 64Mi}
  securityContext:
    {{- toYaml $root.Values.securityContext | nindent 4 }}
  volumeMounts:
    - name: tls-kind
      mountPath: /etc/lanes/tls-kind
      readOnly: true
    - name: tls
      mountPath: /etc/lanes/tls
{{- end }}
{{- end -}}

{{/* What a client pod (the operator, helm test) needs to reach a secure cluster as the admin:
the CA and the admin's password, from the environment (lanes.rpc.tls, lanes.rpc.credentials). */}}
{{- define "lanes.clientEnv" -}}
{{- if .Values.security.enabled }}
- name: LANES_TLS_CA
  value: /etc/lanes/ca/ca.crt
- name: LANES_USERNAME
  value: {{ .Values.security.admin.user | quote }}
- name: LANES_PASSWORD_FILE
  value: /etc/lanes/admin/password
{{- end }}
{{- end -}}

{{- define "lanes.clientMounts" -}}
{{- if .Values.security.enabled }}
- name: ca
  mountPath: /etc/lanes/ca
  readOnly: true
- name: admin
  mountPath: /etc/lanes/admin
  readOnly: true
{{- end }}
{{- end -}}

{{- define "lanes.clientVolumes" -}}
{{- if .Values.security.enabled }}
- name: ca
  configMap:
    name: {{ include "lanes.fullname" . }}-ca
- name: admin
  secret:
    secretName: {{ include "lanes.adminSecret" . }}
    defaultMode: 0440
{{- end }}
{{- end -}}

{{/* Probes on the metrics port's /healthz (the kubelet's gRPC probe speaks no TLS):
include "lanes.probes" (list port failureThresholdForStartup readinessService) */}}
{{- define "lanes.probes" -}}
{{- $port := index . 0 -}}
{{- $startup := index . 1 -}}
{{- $ready := index . 2 -}}
startupProbe:
  httpGet: {path: /healthz, port: {{ $port }}}
  periodSeconds: 2
  failureThreshold: {{ $startup }}
livenessProbe:
  httpGet: {path: /healthz, port: {{ $port }}}
  periodSeconds: 10
  failureThreshold: 3
readinessProbe:
  httpGet: {path: "/healthz{{ if $ready }}?service={{ $ready }}{{ end }}", port: {{ $port }}}
  periodSeconds: 5
  failureThreshold: 2
{{- end -}}
