// KEDA's ScaledObject and TriggerAuthentication (keda.sh/v1alpha1). KEDA's own Go types
// live inside its whole operator module (controller-runtime, cloud SDKs), far too much
// to build for a check, so these are hand-written mirrors of the fields in KEDA 2.x's
// CRDs (keda/apis/keda/v1alpha1: scaledobject_types.go, triggerauthentication_types.go)
// that a chart may set. Decoding into them is strict like the rest: a field not listed
// here is an error, as it would be against KEDA's structural CRD schema. The kafka
// trigger's metadata keys are checked against the scaler's documented parameters.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

type scaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ScaleTargetRef struct {
			APIVersion             string `json:"apiVersion,omitempty"`
			Kind                   string `json:"kind,omitempty"`
			Name                   string `json:"name"`
			EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
		} `json:"scaleTargetRef"`
		PollingInterval  *int32 `json:"pollingInterval,omitempty"`
		InitialCooldown  *int32 `json:"initialCooldownPeriod,omitempty"`
		CooldownPeriod   *int32 `json:"cooldownPeriod,omitempty"`
		IdleReplicaCount *int32 `json:"idleReplicaCount,omitempty"`
		MinReplicaCount  *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount  *int32 `json:"maxReplicaCount,omitempty"`
		Advanced         *struct {
			RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
			HorizontalPodAutoscalerConfig *struct {
				Name     string                                         `json:"name,omitempty"`
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
			} `json:"horizontalPodAutoscalerConfig,omitempty"`
		} `json:"advanced,omitempty"`
		Fallback *struct {
			FailureThreshold int32 `json:"failureThreshold"`
			Replicas         int32 `json:"replicas"`
		} `json:"fallback,omitempty"`
		Triggers []struct {
			Type              string            `json:"type"`
			Name              string            `json:"name,omitempty"`
			UseCachedMetrics  bool              `json:"useCachedMetrics,omitempty"`
			Metadata          map[string]string `json:"metadata"`
			MetricType        string            `json:"metricType,omitempty"`
			AuthenticationRef *struct {
				Name string `json:"name"`
				Kind string `json:"kind,omitempty"`
			} `json:"authenticationRef,omitempty"`
		} `json:"triggers"`
	} `json:"spec"`
}

type triggerAuthentication struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		PodIdentity *struct {
			Provider string `json:"provider"`
		} `json:"podIdentity,omitempty"`
		SecretTargetRef []struct {
			Parameter string `json:"parameter"`
			Name      string `json:"name"`
			Key       string `json:"key"`
		} `json:"secretTargetRef,omitempty"`
		Env []struct {
			Parameter     string `json:"parameter"`
			Name          string `json:"name"`
			ContainerName string `json:"containerName,omitempty"`
		} `json:"env,omitempty"`
	} `json:"spec"`
}

// The kafka scaler's metadata keys (KEDA docs, "Apache Kafka" scaler).
var kafkaMetadata = map[string]bool{
	"bootstrapServers": true, "bootstrapServersFromEnv": true, "consumerGroup": true,
	"consumerGroupFromEnv": true, "topic": true, "topicFromEnv": true, "lagThreshold": true,
	"activationLagThreshold": true, "offsetResetPolicy": true, "allowIdleConsumers": true,
	"scaleToZeroOnInvalidOffset": true, "excludePersistentLag": true, "version": true,
	"partitionLimitation": true, "limitToPartitionsWithLag": true, "sasl": true, "tls": true,
	"unsafeSsl": true,
}

// The parameters a TriggerAuthentication may give the kafka scaler.
var kafkaAuthParameters = map[string]bool{
	"sasl": true, "username": true, "password": true, "tls": true, "ca": true, "cert": true,
	"key": true, "keyPassword": true, "oauthTokenEndpointUri": true, "scopes": true,
}

func (o *scaledObject) DeepCopyObject() runtime.Object          { c := *o; return &c }
func (o *triggerAuthentication) DeepCopyObject() runtime.Object { c := *o; return &c }

// decodeKeda decodes a keda.sh/v1alpha1 document strictly; handled=false for others.
func decodeKeda(raw []byte, gvk schema.GroupVersionKind) (obj runtime.Object, handled bool, err error) {
	if gvk.Group != "keda.sh" {
		return nil, false, nil
	}
	if gvk.Version != "v1alpha1" || (gvk.Kind != "ScaledObject" && gvk.Kind != "TriggerAuthentication") {
		return nil, true, fmt.Errorf("no kind %q in version %q", gvk.Kind, gvk.GroupVersion())
	}
	js, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, true, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if gvk.Kind == "ScaledObject" {
		so := &scaledObject{}
		if err := dec.Decode(so); err != nil {
			return nil, true, fmt.Errorf("strict decoding error: %v", err)
		}
		for i, t := range so.Spec.Triggers {
			if t.Type != "kafka" {
				continue
			}
			var unknown []string
			for k := range t.Metadata {
				if !kafkaMetadata[k] {
					unknown = append(unknown, k)
				}
			}
			sort.Strings(unknown)
			if len(unknown) > 0 {
				return nil, true, fmt.Errorf("triggers[%d]: unknown kafka scaler metadata %v", i, unknown)
			}
			for _, k := range []string{"consumerGroup", "topic"} {
				if t.Metadata[k] == "" {
					return nil, true, fmt.Errorf("triggers[%d]: kafka scaler needs %s", i, k)
				}
			}
		}
		return so, true, nil
	}
	ta := &triggerAuthentication{}
	if err := dec.Decode(ta); err != nil {
		return nil, true, fmt.Errorf("strict decoding error: %v", err)
	}
	for _, r := range ta.Spec.SecretTargetRef {
		if !kafkaAuthParameters[r.Parameter] {
			return nil, true, fmt.Errorf("secretTargetRef parameter %q is not one the kafka scaler reads", r.Parameter)
		}
	}
	return ta, true, nil
}
