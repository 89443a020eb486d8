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

{{/* Fails the render unless exactly one database source is set. */}}
{{- define "converge.checkDatabase" -}}
{{- if and .Values.database.url .Values.database.existingSecret.name -}}
{{- fail "database: set either database.url or database.existingSecret.name, not both" -}}
{{- end -}}
{{- if not (or .Values.database.url .Values.database.existingSecret.name) -}}
{{- fail "database: set database.url or database.existingSecret.name (the PostgreSQL URL the servers use)" -}}
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
{{- if and .Values.stdWorker.enabled .Values.tls.enabled (not .Values.stdWorker.tlsSecretName) -}}
{{- fail "stdWorker.tlsSecretName: required when stdWorker.enabled and tls.enabled (a Secret with the worker's tls.crt, tls.key and ca.crt)" -}}
{{- end -}}
{{- end -}}

{{/* URL the stdworker dials: the broker Service (or the all-in-one Service). */}}
{{- define "converge.brokerURL" -}}
{{- $svc := printf "%s-broker" (include "converge.fullname" .) -}}
{{- if eq .Values.mode "all" -}}
{{- $svc = printf "%s-all" (include "converge.fullname" .) -}}
{{- end -}}
{{- printf "%s://%s:%d" (ternary "https" "http" .Values.tls.enabled) $svc (int .Values.server.port) -}}
{{- end -}}
