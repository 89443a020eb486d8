// Package chartrender renders the Converge Helm chart as "helm template"
// does, values schema included: for the tests that check what the chart
// renders and for the ones that run what it renders.
package chartrender

import (
	"fmt"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// The release the tests render; its name is part of every object's name.
const (
	ReleaseName = "rel"
	Namespace   = "converge"
)

// Render loads the chart in dir, checks its metadata and renders vals for
// the release ReleaseName in Namespace. It returns each template's output
// by file name; a template's fail, or values the schema refuses, is the
// error.
func Render(dir string, vals map[string]any) (map[string]string, error) {
	c, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("chart %s metadata: %w", dir, err)
	}
	opts := chartutil.ReleaseOptions{Name: ReleaseName, Namespace: Namespace, Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(c, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Render(c, rv)
}
