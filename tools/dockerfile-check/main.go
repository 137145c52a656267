// dockerfile-check lints a Dockerfile with BuildKit's own rules, the ones
// `docker build --check` applies (BuildKit's Dockerfile frontend run in lint mode, no
// build, no daemon), and then with mooncake's rules for its image: the final stage
// runs as a numeric non-root user, no base image is unpinned or ":latest", apt lists
// are removed in the RUN that fetched them, and ENTRYPOINT uses the exec form.
//
// Usage: dockerfile-check [Dockerfile]   (default ./Dockerfile)
// Exit 0 when clean; 1 with one line per finding.
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/frontend/dockerfile/dockerfile2llb"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	digest "github.com/opencontainers/go-digest"
)

func main() {
	path := "Dockerfile"
	if len(os.Args) > 2 || (len(os.Args) == 2 && strings.HasPrefix(os.Args[1], "-")) {
		fmt.Fprintln(os.Stderr, "usage: dockerfile-check [Dockerfile]")
		os.Exit(2)
	}
	if len(os.Args) == 2 {
		path = os.Args[1]
	}
	dt, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dockerfile-check:", err)
		os.Exit(2)
	}
	findings := buildkitLint(path, dt)
	findings = append(findings, ourRules(path, dt)...)
	for _, f := range findings {
		fmt.Println(f)
	}
	if len(findings) > 0 {
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "dockerfile-check: %s: clean (BuildKit lint rules and mooncake's)\n", path)
}

// buildkitLint runs BuildKit's frontend in lint mode over every stage.
func buildkitLint(path string, dt []byte) []string {
	ctx := context.Background()
	src := llb.Scratch()
	def, err := src.Marshal(ctx) // the lint results name their source by a definition
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", path, err)}
	}
	sm := llb.NewSourceMap(&src, path, "Dockerfile", dt)
	sm.Definition = def
	res, err := dockerfile2llb.DockerfileLint(ctx, dt, dockerfile2llb.ConvertOpt{
		SourceMap: sm, MetaResolver: offlineImages{}})
	if err != nil {
		return []string{fmt.Sprintf("%s: lint failed: %v", path, err)}
	}
	var out []string
	for _, w := range res.Warnings {
		line := 0
		if len(w.Location.Ranges) > 0 {
			line = int(w.Location.Ranges[0].Start.Line)
		}
		out = append(out, fmt.Sprintf("%s:%d: %s: %s (%s)", path, line, w.RuleName, w.Detail, w.URL))
	}
	if res.Error != nil {
		out = append(out, fmt.Sprintf("%s: %s", path, res.Error.Message))
	}
	return out
}

// offlineImages answers every base-image lookup with an empty linux/amd64 config:
// the lint runs with no registry (CI has none), and no rule here needs the real one.
type offlineImages struct{}

func (offlineImages) ResolveImageConfig(_ context.Context, ref string, _ sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	return ref, "", []byte(`{"architecture":"amd64","os":"linux","config":{}}`), nil
}

var aptInstall = regexp.MustCompile(`apt-get\s+(-\S+\s+)*install`)

// ourRules: what BuildKit does not check but this image promises.
func ourRules(path string, dt []byte) []string {
	res, err := parser.Parse(bytes.NewReader(dt))
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", path, err)}
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", path, err)}
	}
	var out []string
	bad := func(line int, format string, args ...interface{}) {
		out = append(out, fmt.Sprintf("%s:%d: mooncake: %s", path, line, fmt.Sprintf(format, args...)))
	}
	if len(stages) == 0 {
		return []string{path + ": no stages"}
	}
	for _, st := range stages {
		line := 0
		if len(st.Location) > 0 {
			line = st.Location[0].Start.Line
		}
		img := st.BaseName
		if !strings.Contains(img, ":") && !strings.Contains(img, "@") && !isStage(stages, img) {
			bad(line, "base image %s has no tag (it would float to :latest)", img)
		}
		if strings.HasSuffix(img, ":latest") {
			bad(line, "base image %s is :latest", img)
		}
		for _, cmd := range st.Commands {
			run, ok := cmd.(*instructions.RunCommand)
			if !ok {
				continue
			}
			text := strings.Join(run.CmdLine, " ")
			if aptInstall.MatchString(text) && !strings.Contains(text, "rm -rf /var/lib/apt/lists") &&
				st.Name == stages[len(stages)-1].Name {
				bad(run.Location()[0].Start.Line, "apt-get install without removing /var/lib/apt/lists in the same RUN")
			}
			if aptInstall.MatchString(text) && !strings.Contains(text, "--no-install-recommends") &&
				st.Name == stages[len(stages)-1].Name {
				bad(run.Location()[0].Start.Line, "apt-get install without --no-install-recommends")
			}
		}
	}
	final := stages[len(stages)-1]
	user, entry := "", false
	for _, cmd := range final.Commands {
		switch c := cmd.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.EntrypointCommand:
			entry = true
			if c.PrependShell {
				bad(c.Location()[0].Start.Line, "ENTRYPOINT in shell form: signals would go to /bin/sh, not mooncake")
			}
		}
	}
	uid := strings.SplitN(user, ":", 2)[0]
	if !regexp.MustCompile(`^[1-9][0-9]*$`).MatchString(uid) {
		bad(0, "the final stage's USER is %q: it must be a numeric non-root uid (runAsNonRoot checks numbers)", user)
	}
	if !entry {
		bad(0, "the final stage has no ENTRYPOINT")
	}
	return out
}

func isStage(stages []instructions.Stage, name string) bool {
	for _, s := range stages {
		if strings.EqualFold(s.Name, name) {
			return true
		}
	}
	return false
}
