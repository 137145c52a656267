{{- /* The processor roles: each is a StatefulSet (statefulsets.yaml) with a headless
       Service (services.yaml) and a PodDisruptionBudget (pdb.yaml). The gateway, which
       keeps no state, is the one Deployment (deployments.yaml). */ -}}
{{- define "mooncake.processorRoles" -}}
router store wheel executor retry jobs alarms view
{{- end -}}

{{- /* The pod template of one role, the same for the StatefulSets and the gateway's
       Deployment: call with (dict "root" $ "role" "executor"). Every role is the same
       binary with its role as the first argument, configured by MOONCAKE_* environment. */ -}}
{{- define "mooncake.podTemplate" -}}
{{- $root := .root -}}
{{- $role := .role -}}
{{- $v := index $root.Values $role -}}
{{- $authItems := include "mooncake.authItems" (dict "root" $root "role" $role) | trim -}}
metadata:
  labels:
    {{- include "mooncake.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $role }}
  annotations:
    {{- /* Restart on changed credentials (the chart's own Secrets) or schemas. */}}
    checksum/secrets: {{ include (print $root.Template.BasePath "/secrets.yaml") $root | sha256sum }}
    {{- if and (eq $role "router") $v.commandWriterSchemas }}
    checksum/schemas: {{ list $v.commandWriterSchemas $v.commandWriterSchemaIds | toJson | sha256sum }}
    {{- end }}
    {{- with $v.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  # Service links would put <SERVICE>_PORT=tcp://... variables into the
  # environment; some (MOONCAKE_HTTP_PORT for a Service named mooncake-http)
  # would read as mooncake settings.
  enableServiceLinks: false
  automountServiceAccountToken: false
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $root.Values.podSecurityContext | nindent 4 }}
  {{- if eq $role "executor" }}
  # On SIGTERM the executor turns not ready, pauses its input and lets the calls in
  # flight finish (executor.drainTimeoutMs), commits its open transaction, then leaves
  # its consumer group (at most 15 s, less with a shorter session timeout) and closes:
  # the drain plus 20 s.
  terminationGracePeriodSeconds: {{ add (div $v.drainTimeoutMs 1000) 20 }}
  {{- else if eq $role "gateway" }}
  # The gateway waits out its preStop sleep, then Kafka's acknowledgements of the
  # requests in flight (gateway.produceTimeoutMs), plus 20 s to close.
  terminationGracePeriodSeconds: {{ max 30 (add $v.preStopSleepSeconds (div $v.produceTimeoutMs 1000) 20) }}
  {{- else }}
  # On SIGTERM the role turns not ready, commits its open transaction, then leaves its
  # consumer group (at most 15 s) and closes.
  terminationGracePeriodSeconds: 30
  {{- end }}
  topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: ScheduleAnyway
      labelSelector:
        matchLabels:
          {{- include "mooncake.selectorLabels" (dict "root" $root "role" $role) | nindent 10 }}
    - maxSkew: 1
      topologyKey: topology.kubernetes.io/zone
      whenUnsatisfiable: ScheduleAnyway
      labelSelector:
        matchLabels:
          {{- include "mooncake.selectorLabels" (dict "root" $root "role" $role) | nindent 10 }}
  {{- with $v.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: {{ $role }}
      image: {{ include "mooncake.image" $root }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      {{- /* The view answers task questions through a gateway of its own, which
             the public gateways forward them to (GET /api/task). */}}
      args: [{{ eq $role "view" | ternary "gateway,view" $role | quote }}]
      {{- if and (eq $role "gateway") $v.preStopSleepSeconds }}
      # On SIGTERM the gateway answers new requests 503 at once; the sleep lets
      # the endpoint removal reach kube-proxy and the ingress first.
      lifecycle:
        preStop:
          exec:
            command: ["sleep", {{ $v.preStopSleepSeconds | int64 | quote }}]
      {{- end }}
      ports:
        - name: http
          containerPort: {{ $root.Values.httpPort }}
          protocol: TCP
      env:
        {{- with include "mooncake.commonEnv" $root | trim }}{{ . | nindent 8 }}{{ end }}
        {{- with include "mooncake.roleEnv" (dict "root" $root "role" $role) | trim }}{{ . | nindent 8 }}{{ end }}
      livenessProbe:
        httpGet:
          path: /healthz
          port: http
        initialDelaySeconds: 10
        periodSeconds: 10
        timeoutSeconds: 3
        failureThreshold: 6
      {{- if eq $role "gateway" }}
      # /readyz: the broker answers and the tasks topic exists; the Service sends only
      # to ready gateways.
      readinessProbe:
        httpGet:
          path: /readyz
          port: http
        periodSeconds: 5
        timeoutSeconds: 3
        failureThreshold: 2
      {{- else }}
      # /readyz stays 503 until the role's transactions are initialised, it has its
      # assignment and its state is restored (the store's, jobs', view's and alarms'
      # changelogs, the wheel's checkpoint), and turns 503 again as soon as the role is
      # told to stop, before it gives its partitions up. Readiness is what a roll and a
      # drain go by: the StatefulSet stops the next replica only once the one it
      # replaced is Ready again, and the PodDisruptionBudget allows an eviction only
      # while the role's other replicas are Ready. Probing every 2 s and believing the
      # first answer (an in-memory one, from the pod itself) keeps both within 2 s of
      # the truth; nothing is routed by it (the view is reached at the address it
      # advertises in its consumer group), so a flap costs a roll 2 s at most.
      readinessProbe:
        httpGet:
          path: /readyz
          port: http
        periodSeconds: 2
        timeoutSeconds: 2
        failureThreshold: 1
      {{- end }}
      resources:
        {{- toYaml $v.resources | nindent 8 }}
      securityContext:
        {{- toYaml $root.Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
        {{- with include "mooncake.kafkaVolumeMounts" $root | trim }}{{ . | nindent 8 }}{{ end }}
        {{- if $authItems }}
        - name: auth
          mountPath: /etc/mooncake/auth
          readOnly: true
        {{- end }}
        {{- if and (eq $role "router") $v.commandWriterSchemas }}
        - name: schemas
          mountPath: /etc/mooncake/schemas
          readOnly: true
        {{- end }}
  volumes:
    - name: tmp
      emptyDir:
        sizeLimit: 64Mi
    {{- with include "mooncake.kafkaVolumes" $root | trim }}{{ . | nindent 4 }}{{ end }}
    {{- if $authItems }}
    - name: auth
      secret:
        secretName: {{ include "mooncake.authSecret" $root }}
        items:
          {{- $authItems | nindent 10 }}
    {{- end }}
    {{- if and (eq $role "router") $v.commandWriterSchemas }}
    - name: schemas
      configMap:
        name: {{ include "mooncake.fullname" $root }}-schemas
    {{- end }}
{{- end -}}
