{{/*
One runtime Deployment with its PodDisruptionBudget: dict "root" $ "component" name "cfg" values
"args" list "env" extra env (a YAML string) "replicas" number-or-nil "grace" seconds.
*/}}
{{- define "hermes.workload" -}}
{{- $root := .root -}}
{{- $ctx := dict "root" $root "component" .component -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "hermes.fullname" $root }}-{{ .component }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "hermes.labels" $ctx | nindent 4 }}
spec:
  {{- if not (kindIs "invalid" .replicas) }}
  replicas: {{ .replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  strategy:
    type: RollingUpdate
    rollingUpdate: { maxUnavailable: 0, maxSurge: 1 }
  selector:
    matchLabels:
      {{- include "hermes.selectorLabels" $ctx | nindent 6 }}
  template:
    metadata:
      {{- include "hermes.podMetadata" (dict "root" $root "component" .component "cfg" .cfg) | nindent 6 }}
    spec:
      serviceAccountName: {{ include "hermes.serviceAccount" $ctx }}
      automountServiceAccountToken: true
      enableServiceLinks: false
      terminationGracePeriodSeconds: {{ .grace }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.podSecurityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- include "hermes.topologySpread" $ctx | nindent 6 }}
      {{- include "hermes.scheduling" .cfg | nindent 6 }}
      containers:
        - name: {{ .component }}
          image: {{ include "hermes.image" $root | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args:
            {{- toYaml .args | nindent 12 }}
          ports:
            - name: http
              containerPort: {{ .cfg.port }}
              protocol: TCP
          env:
            {{- include "hermes.commonEnv" $root | nindent 12 }}
            {{- with .env }}
            {{- . | nindent 12 }}
            {{- end }}
            {{- with .cfg.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- include "hermes.probes" $root | nindent 10 }}
          resources:
            {{- toYaml .cfg.resources | nindent 12 }}
          {{- with $root.Values.securityContext }}
          securityContext:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 1Gi
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "hermes.fullname" $root }}-{{ .component }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "hermes.labels" $ctx | nindent 4 }}
spec:
  maxUnavailable: {{ .cfg.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "hermes.selectorLabels" $ctx | nindent 6 }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ include "hermes.fullname" $root }}-{{ .component }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "hermes.labels" $ctx | nindent 4 }}
  {{- with .serviceAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ .serviceType | default "ClusterIP" }}
  selector:
    {{- include "hermes.selectorLabels" $ctx | nindent 4 }}
  ports:
    - name: http
      port: {{ .cfg.port }}
      targetPort: http
      protocol: TCP
{{- end -}}

{{/* Refuses autoscaling.minReplicas above maxReplicas, naming both: dict "component" name "cfg" autoscaling values. */}}
{{- define "hermes.replicaRange" -}}
{{- if gt (int .cfg.minReplicas) (int .cfg.maxReplicas) -}}
{{- fail (printf "%s.autoscaling.minReplicas (%v) is above %s.autoscaling.maxReplicas (%v): raise maxReplicas or lower minReplicas" .component .cfg.minReplicas .component .cfg.maxReplicas) -}}
{{- end -}}
{{- end -}}

{{/* A CPU HorizontalPodAutoscaler: dict "root" $ "component" name "cfg" autoscaling values. */}}
{{- define "hermes.hpa" -}}
{{- $ctx := dict "root" .root "component" .component -}}
{{- include "hermes.replicaRange" . -}}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "hermes.fullname" .root }}-{{ .component }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "hermes.labels" $ctx | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "hermes.fullname" .root }}-{{ .component }}
  minReplicas: {{ .cfg.minReplicas }}
  maxReplicas: {{ .cfg.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ .cfg.targetCPUUtilizationPercentage }}
{{- end -}}
