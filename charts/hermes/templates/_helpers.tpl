{{/* Names, labels and the pieces every runtime Pod shares. */}}

{{- define "hermes.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hermes.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "hermes.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hermes.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "hermes.labels" -}}
{{ include "hermes.selectorLabels" . }}
app.kubernetes.io/part-of: hermes
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Refuses an image reference with a moving `:latest` tag, naming the value: dict "value" "what". */}}
{{- define "hermes.notLatest" -}}
{{- if hasSuffix ":latest" .value -}}
{{- fail (printf "%s: not a `:latest` tag — a moving tag makes every Pod restart a possible upgrade and a rollback impossible; pin a version" .what) -}}
{{- end -}}
{{- end -}}

{{- define "hermes.image" -}}
{{- $img := .Values.image -}}
{{- if eq (toString $img.tag) "latest" -}}
{{- fail "image.tag: not `latest` — a moving tag makes every Pod restart a possible upgrade and a rollback impossible; set a version (empty: the chart's appVersion) or image.digest" -}}
{{- end -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{- define "hermes.serviceAccount" -}}
{{- printf "%s-%s" (include "hermes.fullname" .root) .component -}}
{{- end -}}

{{/*
The labels and annotations of a runtime Pod: dict "root" $ "component" name "cfg" its values. The
chart's labels win over the component's podLabels, which win over the top-level podLabels (the
same order for podAnnotations), so a podLabels entry can never change a selector.
*/}}
{{- define "hermes.podMetadata" -}}
{{- $ctx := dict "root" .root "component" .component -}}
{{- $labels := merge (fromYaml (include "hermes.labels" $ctx)) (deepCopy (.cfg.podLabels | default dict)) (deepCopy (.root.Values.podLabels | default dict)) -}}
labels:
  {{- toYaml $labels | nindent 2 }}
{{- with merge (dict) (deepCopy (.cfg.podAnnotations | default dict)) (deepCopy (.root.Values.podAnnotations | default dict)) }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The runtime Pods' security contexts come from values (podSecurityContext, securityContext); the bundled evaluation Pods keep this restricted one: non-root, no privilege escalation, no capabilities, read-only root, RuntimeDefault seccomp. */}}
{{- define "hermes.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* DATABASE_URL and REDIS_URL: from the Secret you made (production), or the bundled evaluation instances. */}}
{{- define "hermes.storeEnv" -}}
{{- $full := include "hermes.fullname" . -}}
- name: DATABASE_URL
{{- if .Values.bundled.postgresql.enabled }}
  value: {{ printf "postgresql://hermes@%s-postgresql.%s.svc:5432/hermes" $full .Release.Namespace | quote }}
{{- else }}
  valueFrom:
    secretKeyRef:
      name: {{ .Values.database.existingSecret | quote }}
      key: {{ .Values.database.secretKey | quote }}
{{- end }}
- name: REDIS_URL
{{- if .Values.bundled.redis.enabled }}
  value: {{ printf "redis://%s-redis.%s.svc:6379" $full .Release.Namespace | quote }}
{{- else }}
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.existingSecret | quote }}
      key: {{ .Values.redis.secretKey | quote }}
{{- end }}
{{- end -}}

{{/* Settings every runtime container shares. */}}
{{- define "hermes.commonEnv" -}}
{{ include "hermes.storeEnv" . }}
- name: HERMES_QUEUE_PREFIX
  value: {{ .Values.redis.queuePrefix | quote }}
- name: HERMES_HOST
  value: "0.0.0.0"
- name: HERMES_SECRETS_SOURCE
  value: kubernetes
- name: HOME
  value: /tmp
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end -}}

{{/* Topology spread over zones and nodes (soft, so a one-node cluster still schedules). */}}
{{- define "hermes.topologySpread" -}}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "hermes.selectorLabels" . | nindent 8 }}
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "hermes.selectorLabels" . | nindent 8 }}
{{- end -}}

{{/* HTTP probes on a port: liveness on /healthz, readiness on /readyz, a startup probe for slow starts. */}}
{{- define "hermes.probes" -}}
startupProbe:
  httpGet: { path: /healthz, port: http }
  periodSeconds: 2
  failureThreshold: 60
livenessProbe:
  httpGet: { path: /healthz, port: http }
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
readinessProbe:
  httpGet: { path: /readyz, port: http }
  periodSeconds: 5
  timeoutSeconds: 3
  failureThreshold: 2
{{- end -}}

{{/* Scheduling values of one component (priorityClassName, nodeSelector, tolerations, affinity). */}}
{{- define "hermes.scheduling" -}}
{{- with .priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
