// Package std embeds the manifests of the std kinds that stdworker serves
// (catalog/std/<kind>/v<N>.yaml, owned by the catalog team std like any
// other team's kinds), so `stdworker kinds apply` can teach them to a
// server without a checkout of this repository.
package std

import "embed"

// FS holds every catalog/std/<kind>/v<N>.yaml, at "<kind>/v<N>.yaml".
//
//go:embed */v*.yaml
var FS embed.FS
