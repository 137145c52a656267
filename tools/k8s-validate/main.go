// k8s-validate checks `helm template` output offline, as strictly as an API server would
// and a little beyond: every document decodes strictly into its Go API type (an unknown,
// duplicated or mistyped field is an error, where `helm lint` and kubectl's client side
// accept them silently), and the cross-references a cluster only reports at run time
// (selectors, probe ports, Secret/ConfigMap names, a StatefulSet's governing Service,
// scale targets) and the restricted pod security settings are checked between the
// documents. Exit 1 lists every problem.
package main

import (
	"bufio"
	"bytes"
	stdjson "encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

type names []string

func (n *names) String() string     { return strings.Join(*n, ",") }
func (n *names) Set(v string) error { *n = append(*n, v); return nil }

// doc is one decoded document and where it came from (helm's "# Source:" line when
// there is one), for messages.
type doc struct {
	source string
	gvk    schema.GroupVersionKind
	name   string
	obj    runtime.Object
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme,
		autoscalingv2.AddToScheme, networkingv1.AddToScheme, rbacv1.AddToScheme,
		monitoringv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

var sourceLine = regexp.MustCompile(`(?m)^# Source: (\S+)`)

// decodeAll splits the stream and decodes each document strictly; a document that fails
// is reported and left out of the cross-reference checks.
func decodeAll(in io.Reader) ([]doc, []string) {
	scheme := newScheme()
	strict := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme,
		json.SerializerOptions{Yaml: true, Strict: true})
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	var out []doc
	var problems []string
	for n := 1; ; n++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		source := fmt.Sprintf("document %d", n)
		if m := sourceLine.FindSubmatch(raw); m != nil {
			source += " (" + string(m[1]) + ")"
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: cannot split the YAML stream: %v", source, err))
			break
		}
		var probe map[string]any
		if err := yaml.Unmarshal(raw, &probe); err != nil {
			problems = append(problems, fmt.Sprintf("%s: not YAML: %v", source, err))
			continue
		}
		if len(probe) == 0 {
			n-- // comments only (helm's "# Source:" of a template that rendered nothing)
			continue
		}
		gvk, err := json.DefaultMetaFactory.Interpret(mustJSON(probe))
		if err != nil || gvk.Kind == "" || gvk.Version == "" {
			problems = append(problems, fmt.Sprintf("%s: no apiVersion/kind", source))
			continue
		}
		obj, handled, err := decodeKeda(raw, *gvk)
		if !handled {
			obj, _, err = strict.Decode(raw, nil, nil)
		}
		if err != nil {
			what := fmt.Sprintf("%s: %s %s", source, gvk.GroupVersion(), gvk.Kind)
			if runtime.IsNotRegisteredError(err) {
				problems = append(problems, what+": unknown apiVersion/kind (give tools/k8s-validate its Go type if it is meant)")
			} else {
				problems = append(problems, fmt.Sprintf("%s: %v", what, err))
			}
			continue
		}
		name := ""
		if m, ok := probe["metadata"].(map[string]any); ok {
			name, _ = m["name"].(string)
		}
		if name == "" {
			problems = append(problems, fmt.Sprintf("%s: %s without metadata.name", source, gvk.Kind))
		}
		out = append(out, doc{source, *gvk, name, obj})
	}
	return out, problems
}

func mustJSON(v any) []byte {
	b, err := stdjson.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func main() {
	var secrets, configMaps names
	flag.Var(&secrets, "external-secret", "a Secret name that exists outside the stream (repeatable)")
	flag.Var(&configMaps, "external-configmap", "a ConfigMap name that exists outside the stream (repeatable)")
	quiet := flag.Bool("q", false, "print nothing when all is well")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: k8s-validate [flags] [file ...]   (default: standard input)\n"+
			"Strictly decodes a multi-document Kubernetes YAML stream (e.g. helm template output)\n"+
			"and checks references and restricted pod security; exits 1 on any problem.\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	var buf bytes.Buffer
	if flag.NArg() == 0 {
		if _, err := io.Copy(&buf, os.Stdin); err != nil {
			fmt.Fprintf(os.Stderr, "k8s-validate: %v\n", err)
			os.Exit(2)
		}
	}
	for _, f := range flag.Args() {
		dt, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "k8s-validate: %v\n", err)
			os.Exit(2)
		}
		buf.Write(dt)
		buf.WriteString("\n---\n")
	}
	objs, problems := decodeAll(&buf)
	if len(objs) == 0 && len(problems) == 0 {
		problems = append(problems, "the stream holds no Kubernetes object")
	}
	problems = append(problems, checkAll(objs, secrets, configMaps)...)
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Printf("k8s-validate: %d problem(s) in %d object(s)\n", len(problems), len(objs))
		os.Exit(1)
	}
	if !*quiet {
		fmt.Printf("k8s-validate: %d object(s) ok\n", len(objs))
	}
}
