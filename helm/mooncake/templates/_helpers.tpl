{{- /* Names, labels and the pieces every mooncake container shares (image, Kafka
       settings, common MOONCAKE_* environment, volumes). */ -}}

{{- define "mooncake.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mooncake.fullname" -}}
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

{{- define "mooncake.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "mooncake.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: mooncake
{{- end -}}

{{- /* Selector labels of one role: call with (dict "root" $ "role" "router"). */ -}}
{{- define "mooncake.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mooncake.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .role }}
{{- end -}}

{{- define "mooncake.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "mooncake.authSecret" -}}
{{- default (printf "%s-auth" (include "mooncake.fullname" .)) .Values.auth.existingSecret -}}
{{- end -}}

{{- define "mooncake.saslSecret" -}}
{{- default (printf "%s-kafka-sasl" (include "mooncake.fullname" .)) .Values.kafka.sasl.existingSecret -}}
{{- end -}}

{{- /* The file key of one auth item (appTokens, innerTokens, adminTokens, appSecrets, alarmWebhooks)
       in the auth Secret, or "" when that file is not used. */ -}}
{{- define "mooncake.authKey" -}}
{{- $v := .root.Values.auth -}}
{{- if $v.existingSecret -}}
{{- index $v.existingSecretKeys .item | default "" -}}
{{- else if eq .item "appTokens" -}}{{- if $v.appTokens -}}app-tokens{{- end -}}
{{- else if eq .item "innerTokens" -}}{{- if $v.innerTokens -}}inner-tokens{{- end -}}
{{- else if eq .item "adminTokens" -}}{{- if $v.adminTokens -}}admin-tokens{{- end -}}
{{- else if eq .item "appSecrets" -}}{{- if $v.appSecrets -}}app-secrets{{- end -}}
{{- else if eq .item "alarmWebhooks" -}}{{- if $v.alarmWebhooks -}}alarm-webhooks{{- end -}}
{{- end -}}
{{- end -}}

{{- /* The auth Secret's files one role reads, as secret volume items (key -> fixed
       path under /etc/mooncake/auth): the gateway gets only the tokens, the executor
       only the signing secrets, the alarms role only the alarm webhook URLs, so none
       sees the others'. Empty: the role mounts nothing (and no Secret has to exist,
       e.g. gateway.noAuth without tokens).
       Call with (dict "root" $ "role" "gateway"). */ -}}
{{- define "mooncake.authItems" -}}
{{- $items := dict -}}
{{- if or (eq .role "gateway") (eq .role "view") -}}
{{- $items = dict "app-tokens" (include "mooncake.authKey" (dict "root" .root "item" "appTokens")) "inner-tokens" (include "mooncake.authKey" (dict "root" .root "item" "innerTokens")) "admin-tokens" (include "mooncake.authKey" (dict "root" .root "item" "adminTokens")) -}}
{{- else if eq .role "executor" -}}
{{- $items = dict "app-secrets" (include "mooncake.authKey" (dict "root" .root "item" "appSecrets")) -}}
{{- else if eq .role "alarms" -}}
{{- $items = dict "alarm-webhooks" (include "mooncake.authKey" (dict "root" .root "item" "alarmWebhooks")) -}}
{{- end -}}
{{- range $path, $key := $items }}
{{- if $key }}
- key: {{ $key }}
  path: {{ $path }}
{{- end }}
{{- end }}
{{- end -}}

{{- /* A value as an environment string: numbers from values files arrive as float64,
       which toString would print as 2e+06; integral ones are printed as integers. */ -}}
{{- define "mooncake.str" -}}
{{- if and (kindIs "float64" .) (eq (float64 (int64 .)) .) -}}
{{- int64 . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{- /* The SASL Secret the topics hook Job reads: the release's own Secret does not
       exist yet before install (hooks run first), so a hook copy of it does. */ -}}
{{- define "mooncake.saslHookSecret" -}}
{{- if .Values.kafka.sasl.existingSecret -}}
{{- .Values.kafka.sasl.existingSecret -}}
{{- else -}}
{{- printf "%s-topics-kafka-sasl" (include "mooncake.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "mooncake.securityProtocol" -}}
{{- $k := .Values.kafka -}}
{{- if and $k.sasl.enabled $k.tls.enabled -}}SASL_SSL
{{- else if $k.sasl.enabled -}}SASL_PLAINTEXT
{{- else if $k.tls.enabled -}}SSL
{{- else -}}PLAINTEXT
{{- end -}}
{{- end -}}

{{- /* Kafka connection environment, shared by the roles, the topics Job and the
       test Pod: call with the root context, or (dict "root" $ "saslSecret" name) to
       read the SASL credentials from another Secret (the topics Job's hook copy). */ -}}
{{- define "mooncake.kafkaEnv" -}}
{{- $root := . -}}
{{- $saslSecret := "" -}}
{{- if hasKey . "root" -}}
{{- $root = .root -}}
{{- $saslSecret = .saslSecret -}}
{{- end -}}
{{- $saslSecret = default (include "mooncake.saslSecret" $root) $saslSecret -}}
{{- $k := $root.Values.kafka -}}
- name: MOONCAKE_BOOTSTRAP_SERVERS
  value: {{ $k.bootstrapServers | quote }}
- name: MOONCAKE_TOPIC_PREFIX
  value: {{ $k.topicPrefix | quote }}
{{- /* kafka.config may set these two itself (e.g. OAUTHBEARER over SASL_SSL); it wins. */}}
{{- if not (hasKey $k.config "security.protocol") }}
- name: MOONCAKE_KAFKA_SECURITY_PROTOCOL
  value: {{ include "mooncake.securityProtocol" $root }}
{{- end }}
{{- if $k.sasl.enabled }}
{{- if not (hasKey $k.config "sasl.mechanisms") }}
- name: MOONCAKE_KAFKA_SASL_MECHANISMS
  value: {{ $k.sasl.mechanism | quote }}
{{- end }}
- name: MOONCAKE_KAFKA_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ $saslSecret }}
      key: {{ $k.sasl.usernameKey }}
- name: MOONCAKE_KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $saslSecret }}
      key: {{ $k.sasl.passwordKey }}
{{- end }}
{{- if and $k.tls.enabled $k.tls.caSecret }}
- name: MOONCAKE_KAFKA_SSL_CA_LOCATION
  value: /etc/mooncake/kafka-ca/{{ $k.tls.caKey }}
{{- end }}
{{- range $prop, $value := $k.config }}
- name: MOONCAKE_KAFKA_{{ $prop | upper | replace "." "_" }}
  value: {{ include "mooncake.str" $value | quote }}
{{- end }}
{{- end -}}

{{- define "mooncake.kafkaVolumeMounts" -}}
{{- if and .Values.kafka.tls.enabled .Values.kafka.tls.caSecret }}
- name: kafka-ca
  mountPath: /etc/mooncake/kafka-ca
  readOnly: true
{{- end }}
{{- end -}}

{{- define "mooncake.kafkaVolumes" -}}
{{- if and .Values.kafka.tls.enabled .Values.kafka.tls.caSecret }}
- name: kafka-ca
  secret:
    secretName: {{ .Values.kafka.tls.caSecret }}
    items:
      - key: {{ .Values.kafka.tls.caKey }}
        path: {{ .Values.kafka.tls.caKey }}
{{- end }}
{{- end -}}

{{- /* The environment every role runs with. */ -}}
{{- define "mooncake.commonEnv" -}}
{{- include "mooncake.kafkaEnv" . }}
- name: MOONCAKE_INSTANCE_ID
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: MOONCAKE_CREATE_TOPICS
  value: "false"
- name: MOONCAKE_PARTITIONS
  value: {{ .Values.topics.partitions | int64 | quote }}
- name: MOONCAKE_HTTP_PORT
  value: {{ .Values.httpPort | int64 | quote }}
- name: MOONCAKE_HORIZON_MS
  value: {{ .Values.config.horizonMs | int64 | quote }}
- name: MOONCAKE_WHEEL_LEAD_MS
  value: {{ .Values.config.wheelLeadMs | int64 | quote }}
- name: MOONCAKE_MAX_DUE_MS
  value: {{ .Values.config.maxDueMs | int64 | quote }}
- name: MOONCAKE_COMMIT_INTERVAL_MS
  value: {{ .Values.config.commitIntervalMs | int64 | quote }}
- name: MOONCAKE_COMMIT_MAX_RECORDS
  value: {{ .Values.config.commitMaxRecords | int64 | quote }}
- name: MOONCAKE_TRANSACTION_TIMEOUT_MS
  value: {{ .Values.config.transactionTimeoutMs | int64 | quote }}
- name: MOONCAKE_RESULTS_RETENTION_MS
  value: {{ .Values.topics.resultsRetentionMs | int64 | quote }}
{{- if .Values.config.confluentSchemaIds }}
- name: MOONCAKE_CONFLUENT_SCHEMA_IDS
  value: {{ .Values.config.confluentSchemaIds | quote }}
{{- end }}
{{- if .Values.config.targetTopics }}
- name: MOONCAKE_TARGET_TOPICS
  value: {{ .Values.config.targetTopics | quote }}
{{- end }}
- name: MOONCAKE_LOG_LEVEL
  value: {{ .Values.config.logLevel | quote }}
- name: MOONCAKE_LOG_FORMAT
  value: {{ .Values.config.logFormat | quote }}
{{- with .Values.config.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- /* The settings one role adds: call with (dict "root" $ "role" "executor"). Secrets
       are files in the mounted auth Secret (mooncake.authItems), passed as @path,
       never as values. */ -}}
{{- define "mooncake.roleEnv" -}}
{{- $root := .root -}}
{{- $v := index $root.Values .role -}}
{{- if eq .role "router" }}
- name: MOONCAKE_ROUTER_FIRES_DUE
  value: {{ required "router.firesDue must be true or false (missing after helm upgrade --reuse-values from an older chart: set it; see the chart README, Upgrading)" $v.firesDue | quote }}
{{- if $v.commandWriterSchemas }}
{{- $files := list }}
{{- range $name, $_ := $v.commandWriterSchemas }}
{{- $path := printf "/etc/mooncake/schemas/%s" $name }}
{{- with index $v.commandWriterSchemaIds $name }}{{- $path = printf "%d=%s" (int64 .) $path }}{{- end }}
{{- $files = append $files $path }}
{{- end }}
- name: MOONCAKE_COMMAND_WRITER_SCHEMAS
  value: {{ join "," $files | quote }}
{{- end }}
{{- else if eq .role "executor" }}
- name: MOONCAKE_ENDPOINTS_DNS_REFRESH_MS
  value: {{ $root.Values.config.endpointsDnsRefreshMs | int64 | quote }}
- name: MOONCAKE_EXECUTOR_CONCURRENCY
  value: {{ $v.concurrency | int64 | quote }}
- name: MOONCAKE_EXECUTOR_HOST_CONNECTIONS
  value: {{ $v.hostConnections | int64 | quote }}
- name: MOONCAKE_EXECUTOR_MAX_UNFINISHED
  value: {{ $v.maxUnfinished | int64 | quote }}
- name: MOONCAKE_EXECUTOR_TIMEOUT_MS
  value: {{ $v.timeoutMs | int64 | quote }}
- name: MOONCAKE_DRAIN_TIMEOUT_MS
  value: {{ $v.drainTimeoutMs | int64 | quote }}
- name: MOONCAKE_RECORD_VERSION
  value: {{ $root.Values.config.recordVersion | int64 | quote }}
- name: MOONCAKE_EXECUTOR_SNIPPET_BYTES
  value: {{ $v.responseBodyBytes | int64 | quote }}
- name: MOONCAKE_EXECUTOR_RESPONSE_HEADERS
  value: {{ join "," $v.responseHeaders | quote }}
{{- $cidrs := concat $v.allowCidrs $root.Values.tests.allowCallbackCidrs }}
{{- if $cidrs }}
- name: MOONCAKE_EXECUTOR_ALLOW_CIDRS
  value: {{ join "," $cidrs | quote }}
{{- end }}
{{- if include "mooncake.authKey" (dict "root" $root "item" "appSecrets") }}
- name: MOONCAKE_APP_SECRETS
  value: "@/etc/mooncake/auth/app-secrets"
{{- end }}
{{- else if eq .role "retry" }}
- name: MOONCAKE_RECORD_VERSION
  value: {{ $root.Values.config.recordVersion | int64 | quote }}
- name: MOONCAKE_RETRY_MAX_ATTEMPTS
  value: {{ $v.maxAttempts | int64 | quote }}
- name: MOONCAKE_RETRY_INITIAL_BACKOFF_MS
  value: {{ $v.initialBackoffMs | int64 | quote }}
- name: MOONCAKE_RETRY_MULTIPLIER
  value: {{ include "mooncake.str" $v.multiplier | quote }}
- name: MOONCAKE_RETRY_MAX_BACKOFF_MS
  value: {{ $v.maxBackoffMs | int64 | quote }}
{{- else if eq .role "jobs" }}
- name: MOONCAKE_JOBS_AHEAD_MS
  value: {{ $v.aheadMs | int64 | quote }}
{{- else if eq .role "alarms" }}
- name: MOONCAKE_ALARM_INTERVAL_MS
  value: {{ $v.intervalMs | int64 | quote }}
{{- if include "mooncake.authKey" (dict "root" $root "item" "alarmWebhooks") }}
- name: MOONCAKE_ALARM_WEBHOOKS
  value: "@/etc/mooncake/auth/alarm-webhooks"
{{- end }}
{{- else if eq .role "view" }}
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
- name: MOONCAKE_ADVERTISED_URL
  value: "http://$(POD_IP):{{ $root.Values.httpPort }}"
- name: MOONCAKE_VIEW_HISTORY_MS
  value: {{ $v.historyMs | int64 | quote }}
{{- if $root.Values.gateway.noAuth }}
- name: MOONCAKE_GATEWAY_NO_AUTH
  value: "true"
{{- end }}
{{- if include "mooncake.authKey" (dict "root" $root "item" "appTokens") }}
- name: MOONCAKE_APP_TOKENS
  value: "@/etc/mooncake/auth/app-tokens"
{{- end }}
{{- if include "mooncake.authKey" (dict "root" $root "item" "innerTokens") }}
- name: MOONCAKE_INNER_TOKENS
  value: "@/etc/mooncake/auth/inner-tokens"
{{- end }}
{{- if include "mooncake.authKey" (dict "root" $root "item" "adminTokens") }}
- name: MOONCAKE_ADMIN_TOKENS
  value: "@/etc/mooncake/auth/admin-tokens"
{{- end }}
{{- else if eq .role "gateway" }}
- name: MOONCAKE_ENDPOINTS_DNS_REFRESH_MS
  value: {{ $root.Values.config.endpointsDnsRefreshMs | int64 | quote }}
- name: MOONCAKE_GATEWAY_THREADS
  value: {{ $v.threads | int64 | quote }}
- name: MOONCAKE_GATEWAY_MAX_BODY_BYTES
  value: {{ $v.maxBodyBytes | int64 | quote }}
- name: MOONCAKE_GATEWAY_MAX_CONNECTIONS_PER_IP
  value: {{ $v.maxConnectionsPerIp | int64 | quote }}
- name: MOONCAKE_GATEWAY_MAX_CONNECTIONS
  value: {{ $v.maxConnections | int64 | quote }}
- name: MOONCAKE_GATEWAY_PRODUCE_TIMEOUT_MS
  value: {{ $v.produceTimeoutMs | int64 | quote }}
{{- if $v.noAuth }}
- name: MOONCAKE_GATEWAY_NO_AUTH
  value: "true"
{{- end }}
{{- if include "mooncake.authKey" (dict "root" $root "item" "appTokens") }}
- name: MOONCAKE_APP_TOKENS
  value: "@/etc/mooncake/auth/app-tokens"
{{- end }}
{{- if include "mooncake.authKey" (dict "root" $root "item" "innerTokens") }}
- name: MOONCAKE_INNER_TOKENS
  value: "@/etc/mooncake/auth/inner-tokens"
{{- end }}
{{- if include "mooncake.authKey" (dict "root" $root "item" "adminTokens") }}
- name: MOONCAKE_ADMIN_TOKENS
  value: "@/etc/mooncake/auth/admin-tokens"
{{- end }}
{{- end }}
{{- end -}}
