{{/* Chart name, truncated to the 63 characters DNS labels allow. */}}
{{- define "converge.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Release-qualified name; every object name starts with it. */}}
{{- define "converge.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels shared by every object. */}}
{{- define "converge.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "converge.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: converge
{{- end -}}

{{/* Selector labels of one tier; call with (dict "root" $ "component" "control"). */}}
{{- define "converge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "converge.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The server tiers this release runs: control and broker, or one "all". */}}
{{- define "converge.roles" -}}
{{- if eq .Values.mode "all" -}}
all
{{- else -}}
control,broker
{{- end -}}
{{- end -}}

{{/* Image reference; call with (dict "image" .Values.image "root" $). */}}
{{- define "converge.image" -}}
{{- if .image.digest -}}
{{- printf "%s@%s" .image.repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag) -}}
{{- end -}}
{{- end -}}

{{/* Name of the Secret holding the database URL, and its key. */}}
{{- define "converge.databaseSecretName" -}}
{{- if .Values.database.existingSecret.name -}}
{{- .Values.database.existingSecret.name -}}
{{- else -}}
{{- printf "%s-database" (include "converge.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "converge.databaseSecretKey" -}}
{{- if .Values.database.existingSecret.name -}}
{{- .Values.database.existingSecret.key -}}
{{- else -}}
url
{{- end -}}
{{- end -}}

{{/* Name of the Secret holding the read replica's URL, and its key; empty without a replica. */}}
{{- define "converge.readDatabaseSecretName" -}}
{{- if .Values.readDatabase.existingSecret.name -}}
{{- .Values.readDatabase.existingSecret.name -}}
{{- else if .Values.readDatabase.url -}}
{{- printf "%s-read-database" (include "converge.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "converge.readDatabaseSecretKey" -}}
{{- if .Values.readDatabase.existingSecret.name -}}
{{- .Values.readDatabase.existingSecret.key -}}
{{- else -}}
url
{{- end -}}
{{- end -}}

{{/* Fails the render unless exactly one database source is set, and at most one read replica source. */}}
{{- define "converge.checkDatabase" -}}
{{- if and .Values.database.url .Values.database.existingSecret.name -}}
{{- fail "database: set either database.url or database.existingSecret.name, not both" -}}
{{- end -}}
{{- if not (or .Values.database.url .Values.database.existingSecret.name) -}}
{{- fail "database: set database.url or database.existingSecret.name (the PostgreSQL URL the servers use)" -}}
{{- end -}}
{{- if and .Values.readDatabase.url .Values.readDatabase.existingSecret.name -}}
{{- fail "readDatabase: set either readDatabase.url or readDatabase.existingSecret.name, not both" -}}
{{- end -}}
{{- if and .Values.readDatabase.url (eq .Values.readDatabase.url .Values.database.url) -}}
{{- fail "readDatabase.url: names database.url itself; give a streaming replica of it, or leave it empty" -}}
{{- end -}}
{{- end -}}

{{/* Fails the render on TLS and metrics settings that cannot work. */}}
{{- define "converge.checkSettings" -}}
{{- if and .Values.tls.enabled (not .Values.tls.secretName) -}}
{{- fail "tls.secretName: required when tls.enabled is true (a kubernetes.io/tls Secret with tls.crt and tls.key)" -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled: needs metrics.enabled=true (the ServiceMonitor scrapes the metrics port)" -}}
{{- end -}}
{{- if and .Values.probes.useMetricsPort (not .Values.metrics.enabled) -}}
{{- fail "probes.useMetricsPort: needs metrics.enabled=true" -}}
{{- end -}}
{{- $a := .Values.authorization -}}
{{- if and $a.enabled $a.allowAnonymous -}}
{{- fail "authorization.allowAnonymous: only with authorization.enabled=false (anonymous access is what turning authorization off means)" -}}
{{- end -}}
{{- if and (not $a.enabled) (not $a.allowAnonymous) -}}
{{- fail "authorization.enabled=false lets every API caller do everything, which converge serve refuses beyond loopback; set authorization.allowAnonymous=true to accept that, or keep authorization on" -}}
{{- end -}}
{{- if and $a.enabled (not (or $a.adminIDs $a.writerIDs $a.readerIDs $a.teams $a.grants)) -}}
{{- fail "authorization: no identity holds a role; list identities in authorization.adminIDs, writerIDs, readerIDs, teams or grants (token identities or SPIFFE IDs), or turn authorization off with authorization.enabled=false and authorization.allowAnonymous=true" -}}
{{- end -}}
{{- if and (include "converge.generatesTokens" .) (has $a.tokens.key $a.tokens.generate) -}}
{{- fail (printf "authorization.tokens.generate: %q is also tokens.key, the key of the token file; name the identity otherwise" $a.tokens.key) -}}
{{- end -}}
{{- $p := .Values.stdWorker.persistence -}}
{{- if and .Values.stdWorker.enabled $p.enabled (not $p.existingClaim) (gt (int .Values.stdWorker.replicaCount) 1) (not (has "ReadWriteMany" $p.accessModes)) -}}
{{- fail (printf "stdWorker.persistence: %d replicas share one claim, so accessModes needs ReadWriteMany (got %v); or set stdWorker.replicaCount=1" (int .Values.stdWorker.replicaCount) $p.accessModes) -}}
{{- end -}}
{{- if and .Values.stdWorker.enabled .Values.tls.enabled (not .Values.stdWorker.tlsSecretName) -}}
{{- fail "stdWorker.tlsSecretName: required when stdWorker.enabled and tls.enabled (a Secret with the worker's tls.crt, tls.key and ca.crt)" -}}
{{- end -}}
{{- end -}}

{{/* URL of the control API: the control Service (or the all-in-one Service). */}}
{{- define "converge.apiURL" -}}
{{- include "converge.serviceURL" (dict "root" . "role" "control") -}}
{{- end -}}

{{/* URL of the Service of a role (control or broker), or of the all-in-one Service in mode all. */}}
{{- define "converge.serviceURL" -}}
{{- $root := .root -}}
{{- $svc := printf "%s-%s" (include "converge.fullname" $root) (ternary "all" .role (eq $root.Values.mode "all")) -}}
{{- printf "%s://%s:%d" (ternary "https" "http" $root.Values.tls.enabled) $svc (int $root.Values.server.port) -}}
{{- end -}}

{{/* Non-empty when the chart makes the token Secret. */}}
{{- define "converge.generatesTokens" -}}
{{- $t := .Values.authorization.tokens -}}
{{- if and .Values.authorization.enabled (not $t.existingSecret) $t.generate -}}true{{- end -}}
{{- end -}}

{{/* Name of the Secret holding the --token-file; empty when there is none. */}}
{{- define "converge.tokensSecretName" -}}
{{- if .Values.authorization.enabled -}}
{{- if .Values.authorization.tokens.existingSecret -}}
{{- .Values.authorization.tokens.existingSecret -}}
{{- else if include "converge.generatesTokens" . -}}
{{- printf "%s-tokens" (include "converge.fullname" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* converge serve's authorization flags, as container args. */}}
{{- define "converge.authzArgs" -}}
{{- $a := .Values.authorization -}}
{{- if $a.enabled }}
{{- with $a.adminIDs }}
- --admin-ids={{ join "," . }}
{{- end }}
{{- with $a.writerIDs }}
- --writer-ids={{ join "," . }}
{{- end }}
{{- with $a.readerIDs }}
- --reader-ids={{ join "," . }}
{{- end }}
{{- range $team, $ids := $a.teams }}
- --team={{ $team }}={{ join "," $ids }}
{{- end }}
{{- range $a.grants }}
- --grant={{ .role }}:{{ join "," (.kinds | default .namespaces) }}={{ join "," .identities }}
{{- end }}
{{- if include "converge.tokensSecretName" . }}
- --token-file=/etc/converge/tokens/{{ $a.tokens.key }}
{{- end }}
{{- else }}
- --allow-anonymous
{{- end }}
{{- end -}}

{{/* The Secret name and key of stdworker's bearer token; empty name when it sends none. */}}
{{- define "converge.stdworkerTokenName" -}}
{{- $t := .Values.stdWorker.tokenSecret -}}
{{- if $t.name -}}
{{- $t.name -}}
{{- else if and (include "converge.generatesTokens" .) (has "stdworker" .Values.authorization.tokens.generate) -}}
{{- include "converge.tokensSecretName" . -}}
{{- end -}}
{{- end -}}
{{- define "converge.stdworkerTokenKey" -}}
{{- ternary .Values.stdWorker.tokenSecret.key "stdworker" (ne .Values.stdWorker.tokenSecret.name "") -}}
{{- end -}}

{{/* Name of stdworker's state claim; empty when its state is an emptyDir. */}}
{{- define "converge.stdworkerClaim" -}}
{{- $p := .Values.stdWorker.persistence -}}
{{- if $p.enabled -}}
{{- $p.existingClaim | default (printf "%s-stdworker-state" (include "converge.fullname" .)) -}}
{{- end -}}
{{- end -}}

{{/* URL the stdworker dials: the broker Service (or the all-in-one Service). */}}
{{- define "converge.brokerURL" -}}
{{- include "converge.serviceURL" (dict "root" . "role" "broker") -}}
{{- end -}}

{{/* stdworker's flags for reaching the server: its bearer token and its TLS client files. */}}
{{- define "converge.stdworkerClientArgs" -}}
{{- if include "converge.stdworkerTokenName" . }}
- --token-file=/etc/stdworker/token/{{ include "converge.stdworkerTokenKey" . }}
{{- end }}
{{- if .Values.tls.enabled }}
- --tls-ca=/etc/stdworker/tls/ca.crt
- --tls-cert=/etc/stdworker/tls/tls.crt
- --tls-key=/etc/stdworker/tls/tls.key
{{- end }}
{{- end -}}

{{/* The mounts converge.stdworkerClientArgs names. */}}
{{- define "converge.stdworkerClientMounts" -}}
{{- if .Values.tls.enabled }}
- name: tls
  mountPath: /etc/stdworker/tls
  readOnly: true
{{- end }}
{{- if include "converge.stdworkerTokenName" . }}
- name: token
  mountPath: /etc/stdworker/token
  readOnly: true
{{- end }}
{{- end -}}

{{/* stdworker's environment: where the broker and the control API are. */}}
{{- define "converge.stdworkerEnv" -}}
- name: CONVERGE_SERVER
  value: {{ include "converge.brokerURL" . | quote }}
- name: CONVERGE_API_SERVER
  value: {{ include "converge.apiURL" . | quote }}
{{- with .Values.stdWorker.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}
