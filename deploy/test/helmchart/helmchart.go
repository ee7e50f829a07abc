package helmchart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"helm.sh/helm/v4/pkg/strvals"
)

// ReleaseName and ReleaseNamespace are those Render installs as. The
// chart's objects depend on neither: they are the kustomize base's names,
// in its namespace nrinet-system, and the release's record goes to the
// release's namespace (kube-system in docs/deploy.md).
const (
	ReleaseName      = "nrinet"
	ReleaseNamespace = "kube-system"
)

// Flags are values as helm's flags give them: later ones win, and
// SetString's over Set's over Files'.
type Flags struct {
	Files     []string // values files, -f
	Set       []string // key=value in Helm's strvals syntax, --set
	SetString []string // key=value, the value a string, --set-string
}

// Values merges the values of f as helm does (helm's
// values.Options.MergeValues, for local files).
func Values(f Flags) (map[string]any, error) {
	vals := map[string]any{}
	for _, file := range f.Files {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("values: %w", err)
		}
		v, err := loader.LoadValues(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("values %s: %w", file, err)
		}
		vals = loader.MergeMaps(vals, v)
	}
	for _, s := range f.Set {
		if err := strvals.ParseInto(s, vals); err != nil {
			return nil, fmt.Errorf("values: --set %q: %w", s, err)
		}
	}
	for _, s := range f.SetString {
		if err := strvals.ParseIntoString(s, vals); err != nil {
			return nil, fmt.Errorf("values: --set-string %q: %w", s, err)
		}
	}
	return vals, nil
}

// Render renders the chart in dir with vals as `helm template` does (the
// client-only install of Helm's action package, less what this chart does
// not use: dependencies, CRDs, post-renderers): the values checked
// against the chart's schema, the templates rendered by Helm's engine
// with Helm's default capabilities, NOTES.txt left out, the objects
// sorted in Helm's install order. It returns the manifest: the objects as
// YAML documents, each after a "# Source:" comment naming its template.
// A chart with hooks is refused, since a plain manifest would not run
// them.
func Render(ctx context.Context, dir string, vals map[string]any) (string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return "", fmt.Errorf("load chart %s: %w", dir, err)
	}
	if len(ch.Metadata.Dependencies) != 0 || len(ch.CRDObjects()) != 0 {
		return "", fmt.Errorf("render chart %s: dependencies or CRDs, which Render does not handle", dir)
	}
	caps := common.DefaultCapabilities.Copy()
	opts := common.ReleaseOptions{Name: ReleaseName, Namespace: ReleaseNamespace, Revision: 1, IsInstall: true}
	top, err := util.ToRenderValuesWithSchemaValidation(ch, vals, opts, caps, false)
	if err != nil {
		return "", fmt.Errorf("render chart %s: %w", dir, err)
	}
	files, err := engine.Engine{}.RenderWithContext(ctx, ch, top)
	if err != nil {
		return "", fmt.Errorf("render chart %s: %w", dir, err)
	}
	delete(files, path.Join(ch.Name(), "templates", "NOTES.txt"))
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return "", fmt.Errorf("render chart %s: %w", dir, err)
	}
	if len(hooks) != 0 {
		return "", fmt.Errorf("render chart %s: %d hooks (%s first), which a plain manifest would not run", dir, len(hooks), hooks[0].Path)
	}
	var b strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return b.String(), nil
}

// Lint lints the chart in dir with vals as `helm lint --strict` does and
// returns every message, informational ones included. The error is the
// linter's own failure (no chart in dir), or the messages of severity
// warning and above, joined.
func Lint(dir string, vals map[string]any) ([]support.Message, error) {
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err != nil {
		return nil, fmt.Errorf("lint chart %s: %w", dir, err)
	}
	res := lint.RunAll(dir, vals, ReleaseNamespace)
	var errs []error
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			errs = append(errs, m)
		}
	}
	if len(errs) != 0 {
		return res.Messages, fmt.Errorf("lint chart %s: %w", dir, errors.Join(errs...))
	}
	return res.Messages, nil
}
