// The checks strict decoding cannot make: what is missing, what an API server would
// refuse in a value (not only in a field's type), and what does not fit together across
// documents.
package main

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// podOwner is anything that carries a pod template, for the pod checks.
type podOwner struct {
	where  string
	labels map[string]string
	spec   *corev1.PodSpec
}

func checkAll(docs []doc, externalSecrets, externalConfigMaps []string) []string {
	var problems []string
	bad := func(d doc, format string, args ...interface{}) {
		problems = append(problems, fmt.Sprintf("%s: %s %s: %s", d.source, d.gvk.Kind, d.name,
			fmt.Sprintf(format, args...)))
	}
	secrets, configMaps, services := map[string]bool{}, map[string]bool{}, map[string]*corev1.Service{}
	// workloads[kind][name]: the scale targets (Deployments and StatefulSets, apps/v1).
	workloads := map[string]map[string]bool{"Deployment": {}, "StatefulSet": {}}
	for _, n := range externalSecrets {
		secrets[n] = true
	}
	for _, n := range externalConfigMaps {
		configMaps[n] = true
	}
	var pods []podOwner
	triggerAuths := map[string]bool{}
	for _, d := range docs {
		switch o := d.obj.(type) {
		case *corev1.Secret:
			secrets[o.Name] = true
		case *corev1.ConfigMap:
			configMaps[o.Name] = true
		case *corev1.Service:
			services[o.Name] = o
		case *triggerAuthentication:
			triggerAuths[o.Name] = true
		case *appsv1.Deployment:
			workloads["Deployment"][o.Name] = true
			if problem := templateSelector(o.Spec.Selector, o.Spec.Template.Labels); problem != "" {
				bad(d, "%s", problem)
			}
			pods = append(pods, podOwner{d.source + ": Deployment " + o.Name, o.Spec.Template.Labels, &o.Spec.Template.Spec})
		case *appsv1.StatefulSet:
			workloads["StatefulSet"][o.Name] = true
			if problem := templateSelector(o.Spec.Selector, o.Spec.Template.Labels); problem != "" {
				bad(d, "%s", problem)
			}
			for _, problem := range statefulSetValues(o) {
				bad(d, "%s", problem)
			}
			pods = append(pods, podOwner{d.source + ": StatefulSet " + o.Name, o.Spec.Template.Labels, &o.Spec.Template.Spec})
		case *batchv1.Job:
			pods = append(pods, podOwner{d.source + ": Job " + o.Name, o.Spec.Template.Labels, &o.Spec.Template.Spec})
		case *corev1.Pod:
			pods = append(pods, podOwner{d.source + ": Pod " + o.Name, o.Labels, &o.Spec})
		}
	}
	for _, p := range pods {
		problems = append(problems, checkPod(p, secrets, configMaps)...)
	}
	for _, d := range docs {
		switch o := d.obj.(type) {
		case *appsv1.Deployment:
			if other := othersSelected(o.Spec.Selector, d.source+": Deployment "+o.Name, pods); other != "" {
				bad(d, "spec.selector also matches the pods of %s", other)
			}
		case *appsv1.StatefulSet:
			if other := othersSelected(o.Spec.Selector, d.source+": StatefulSet "+o.Name, pods); other != "" {
				bad(d, "spec.selector also matches the pods of %s", other)
			}
			// The governing Service names the pods (<pod>.<service>): it must exist, be
			// headless, and select this StatefulSet's pods.
			svc := services[o.Spec.ServiceName]
			switch {
			case o.Spec.ServiceName == "":
				bad(d, "no spec.serviceName (the headless Service that names its pods)")
			case svc == nil:
				bad(d, "spec.serviceName %s is not a Service in the stream", o.Spec.ServiceName)
			case svc.Spec.ClusterIP != corev1.ClusterIPNone:
				bad(d, "spec.serviceName %s is not a headless Service (clusterIP: None)", o.Spec.ServiceName)
			case len(svc.Spec.Selector) == 0 ||
				!labels.SelectorFromSet(labels.Set(svc.Spec.Selector)).Matches(labels.Set(o.Spec.Template.Labels)):
				bad(d, "spec.serviceName %s: its selector %v does not match the pod template's labels", o.Spec.ServiceName, svc.Spec.Selector)
			}
		case *corev1.Service:
			if len(o.Spec.Selector) == 0 {
				bad(d, "no spec.selector")
			} else if !selectsAny(o.Spec.Selector, pods) {
				bad(d, "spec.selector %v matches no pod template in the stream", o.Spec.Selector)
			}
		case *policyv1.PodDisruptionBudget:
			if o.Spec.Selector == nil || !selectsAny(o.Spec.Selector.MatchLabels, pods) {
				bad(d, "spec.selector matches no pod template in the stream")
			}
			if o.Spec.MinAvailable == nil && o.Spec.MaxUnavailable == nil {
				bad(d, "neither minAvailable nor maxUnavailable")
			}
		case *autoscalingv2.HorizontalPodAutoscaler:
			ref := o.Spec.ScaleTargetRef
			if !scaleTarget(workloads, ref.APIVersion, ref.Kind, ref.Name) {
				bad(d, "scaleTargetRef %s %s/%s is not a Deployment or StatefulSet in the stream", ref.APIVersion, ref.Kind, ref.Name)
			}
			if o.Spec.MaxReplicas < 1 || (o.Spec.MinReplicas != nil && *o.Spec.MinReplicas > o.Spec.MaxReplicas) {
				bad(d, "replica bounds are inverted or zero")
			}
		case *networkingv1.Ingress:
			for _, r := range o.Spec.Rules {
				if r.HTTP == nil {
					continue
				}
				for _, path := range r.HTTP.Paths {
					svc := path.Backend.Service
					if svc == nil || services[svc.Name] == nil {
						bad(d, "backend service %v is not in the stream", svc)
						continue
					}
					if !servicePort(services[svc.Name], svc.Port) {
						bad(d, "backend port %v is not a port of Service %s", svc.Port, svc.Name)
					}
				}
			}
			for _, t := range o.Spec.TLS {
				if t.SecretName == "" {
					bad(d, "a tls entry without secretName")
				}
			}
		case *scaledObject:
			// KEDA's defaults: apiVersion apps/v1, kind Deployment.
			ref := o.Spec.ScaleTargetRef
			apiVersion, kind := ref.APIVersion, ref.Kind
			if apiVersion == "" {
				apiVersion = "apps/v1"
			}
			if kind == "" {
				kind = "Deployment"
			}
			if !scaleTarget(workloads, apiVersion, kind, ref.Name) {
				bad(d, "scaleTargetRef %s %s/%s is not a Deployment or StatefulSet in the stream", apiVersion, kind, ref.Name)
			}
			for _, t := range o.Spec.Triggers {
				if t.AuthenticationRef != nil && !triggerAuths[t.AuthenticationRef.Name] {
					bad(d, "authenticationRef %s is not a TriggerAuthentication in the stream", t.AuthenticationRef.Name)
				}
			}
			if o.Spec.MaxReplicaCount != nil && o.Spec.MinReplicaCount != nil && *o.Spec.MinReplicaCount > *o.Spec.MaxReplicaCount {
				bad(d, "minReplicaCount above maxReplicaCount")
			}
		case *triggerAuthentication:
			for _, r := range o.Spec.SecretTargetRef {
				if !secrets[r.Name] {
					bad(d, "secretTargetRef %s: Secret %s is neither in the stream nor declared external", r.Parameter, r.Name)
				}
			}
		case *monitoringv1.ServiceMonitor:
			matched := false
			for _, s := range services {
				if sel, err := metaSelector(o.Spec.Selector.MatchLabels); err == nil &&
					len(o.Spec.Selector.MatchLabels) > 0 && sel.Matches(labels.Set(s.Labels)) {
					matched = true
				}
			}
			if !matched {
				bad(d, "spec.selector matches no Service in the stream")
			}
		}
	}
	return problems
}

func metaSelector(m map[string]string) (labels.Selector, error) {
	return labels.SelectorFromSet(labels.Set(m)), nil
}

// templateSelector: a workload's selector must be given and select its own pod template
// ("" when it does).
func templateSelector(sel *metav1.LabelSelector, template map[string]string) string {
	if sel == nil || len(sel.MatchLabels) == 0 {
		return "no spec.selector.matchLabels"
	}
	if s, err := metav1.LabelSelectorAsSelector(sel); err != nil || !s.Matches(labels.Set(template)) {
		return "spec.selector does not match the pod template's labels"
	}
	return ""
}

// othersSelected names another pod owner in the stream whose pods a workload's selector
// would also take ("" for none): two controllers would fight over them.
func othersSelected(sel *metav1.LabelSelector, self string, pods []podOwner) string {
	if sel == nil {
		return ""
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || s.Empty() {
		return ""
	}
	for _, p := range pods {
		if p.where != self && s.Matches(labels.Set(p.labels)) {
			return p.where
		}
	}
	return ""
}

// scaleTarget: apiVersion/kind/name is a Deployment or StatefulSet (apps/v1) in the stream.
func scaleTarget(workloads map[string]map[string]bool, apiVersion, kind, name string) bool {
	return apiVersion == appsv1.SchemeGroupVersion.String() && workloads[kind] != nil && workloads[kind][name]
}

// statefulSetValues: the values of a StatefulSet's spec an API server refuses (strict
// decoding checks only their types).
func statefulSetValues(o *appsv1.StatefulSet) []string {
	var problems []string
	switch o.Spec.PodManagementPolicy {
	case "", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		problems = append(problems, fmt.Sprintf("spec.podManagementPolicy %q is neither OrderedReady nor Parallel", o.Spec.PodManagementPolicy))
	}
	u := o.Spec.UpdateStrategy
	switch u.Type {
	case "", appsv1.RollingUpdateStatefulSetStrategyType:
		if r := u.RollingUpdate; r != nil && r.Partition != nil && *r.Partition < 0 {
			problems = append(problems, "spec.updateStrategy.rollingUpdate.partition is negative")
		}
	case appsv1.OnDeleteStatefulSetStrategyType:
		if u.RollingUpdate != nil {
			problems = append(problems, "spec.updateStrategy.rollingUpdate is only for type RollingUpdate")
		}
	default:
		problems = append(problems, fmt.Sprintf("spec.updateStrategy.type %q is neither RollingUpdate nor OnDelete", u.Type))
	}
	if o.Spec.Replicas != nil && *o.Spec.Replicas < 0 {
		problems = append(problems, "spec.replicas is negative")
	}
	if p := o.Spec.Template.Spec.RestartPolicy; p != "" && p != corev1.RestartPolicyAlways {
		problems = append(problems, fmt.Sprintf("spec.template.spec.restartPolicy %q is not Always", p))
	}
	return problems
}

func selectsAny(sel map[string]string, pods []podOwner) bool {
	if len(sel) == 0 {
		return false
	}
	s := labels.SelectorFromSet(labels.Set(sel))
	for _, p := range pods {
		if s.Matches(labels.Set(p.labels)) {
			return true
		}
	}
	return false
}

func servicePort(s *corev1.Service, port networkingv1.ServiceBackendPort) bool {
	for _, p := range s.Spec.Ports {
		if (port.Name != "" && p.Name == port.Name) || (port.Number != 0 && p.Port == port.Number) {
			return true
		}
	}
	return false
}

// checkPod: required fields, probe ports, references, and the restricted profile.
func checkPod(p podOwner, secrets, configMaps map[string]bool) []string {
	var problems []string
	bad := func(format string, args ...interface{}) {
		problems = append(problems, p.where+": "+fmt.Sprintf(format, args...))
	}
	spec := p.spec
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		bad("pod securityContext.runAsNonRoot is not true")
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		bad("pod securityContext.seccompProfile is not RuntimeDefault")
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
		if v.Secret != nil && !secrets[v.Secret.SecretName] {
			bad("volume %s: Secret %s is neither in the stream nor declared external", v.Name, v.Secret.SecretName)
		}
		if v.ConfigMap != nil && !configMaps[v.ConfigMap.Name] {
			bad("volume %s: ConfigMap %s is neither in the stream nor declared external", v.Name, v.ConfigMap.Name)
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil && !secrets[src.Secret.Name] {
					bad("volume %s: Secret %s is neither in the stream nor declared external", v.Name, src.Secret.Name)
				}
			}
		}
	}
	all := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	if len(spec.Containers) == 0 {
		bad("no containers")
	}
	for _, c := range all {
		if c.Name == "" || c.Image == "" {
			bad("a container without name or image")
		}
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			bad("container %s: allowPrivilegeEscalation is not false", c.Name)
		}
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			bad("container %s: readOnlyRootFilesystem is not true", c.Name)
		}
		if sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) > 0 {
			bad("container %s: capabilities do not drop ALL (and add nothing)", c.Name)
		}
		if sc != nil && sc.Privileged != nil && *sc.Privileged {
			bad("container %s: privileged", c.Name)
		}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				bad("container %s: volumeMount %s has no volume", c.Name, m.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil && !secrets[r.Name] && (r.Optional == nil || !*r.Optional) {
				bad("container %s: env %s: Secret %s is neither in the stream nor declared external", c.Name, e.Name, r.Name)
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil && !configMaps[r.Name] && (r.Optional == nil || !*r.Optional) {
				bad("container %s: env %s: ConfigMap %s is neither in the stream nor declared external", c.Name, e.Name, r.Name)
			}
		}
		for _, from := range c.EnvFrom {
			if from.SecretRef != nil && !secrets[from.SecretRef.Name] {
				bad("container %s: envFrom Secret %s is neither in the stream nor declared external", c.Name, from.SecretRef.Name)
			}
			if from.ConfigMapRef != nil && !configMaps[from.ConfigMapRef.Name] {
				bad("container %s: envFrom ConfigMap %s is neither in the stream nor declared external", c.Name, from.ConfigMapRef.Name)
			}
		}
		for what, probe := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
			if probe == nil || probe.HTTPGet == nil {
				continue
			}
			if !containerPort(c, probe.HTTPGet.Port) {
				bad("container %s: %s probe port %s is not a port of the container", c.Name, what, probe.HTTPGet.Port.String())
			}
		}
	}
	return problems
}

func containerPort(c corev1.Container, port intstr.IntOrString) bool {
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return true
		}
	}
	return false
}
