package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultConfig names a kind version's default provider config.
const DefaultConfig = "default"

// ErrInvalidConfig: a provider config does not match its kind's
// config_schema (alone for the default, merged onto the default for a
// named one). Wrapped errors name the config and the path.
var ErrInvalidConfig = errors.New("invalid provider config")

// maxListedConfigs bounds how many broken named configs one error spells out.
const maxListedConfigs = 10

// ProviderConfig is a stored provider config.
type ProviderConfig struct {
	Kind        string
	Version     int32
	Name        string
	Config      []byte // JSON object
	Description string
	Revision    int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// ConfigValidator validates the effective provider configs of one kind
// version.
type ConfigValidator struct {
	// KindRevision is the kind revision Validate was built from; a write
	// fails with ErrStaleKind if the kind changed since.
	KindRevision int64
	// Validate checks one effective config (JSON object).
	Validate func(effective []byte) error
}

// MergeConfig returns a named config's effective config: the default's
// top-level keys with the named config's keys winning (JSON's a || b for
// objects). Either may be empty.
func MergeConfig(defaultConfig, named []byte) ([]byte, error) {
	merged := map[string]json.RawMessage{}
	for _, doc := range [][]byte{defaultConfig, named} {
		if len(doc) == 0 {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("config: want a JSON object: %w", err)
		}
		for k, v := range m {
			merged[k] = v
		}
	}
	return json.Marshal(merged)
}

const configColumns = `kind, kind_version, name, config, description, revision, created_at, updated_at`

func scanConfig(row pgx.Row) (ProviderConfig, error) {
	var c ProviderConfig
	err := row.Scan(&c.Kind, &c.Version, &c.Name, &c.Config, &c.Description, &c.Revision, &c.CreatedAt, &c.UpdatedAt)
	return c, err
}

// ApplyProviderConfig creates or updates a provider config. The result
// is "created", "configured" (revision bumped) or "unchanged". A named
// config is validated merged onto the default; a new default is
// validated alone and with every named config merged onto it.
func (s *Store) ApplyProviderConfig(ctx context.Context, c ProviderConfig, v ConfigValidator) (ProviderConfig, string, error) {
	var out ProviderConfig
	var result string
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockConfigKind(ctx, tx, c.Kind, c.Version, v); err != nil {
			return err
		}
		configs, err := readConfigs(ctx, tx, c.Kind, c.Version)
		if err != nil {
			return err
		}
		if err := validateWith(configs, c, v); err != nil {
			return err
		}
		prev, had := configs[c.Name]
		if !had {
			result = "created"
			out, err = scanConfig(tx.QueryRow(ctx, `
				INSERT INTO provider_configs (kind, kind_version, name, config, description)
				VALUES ($1, $2, $3, $4, $5) RETURNING `+configColumns,
				c.Kind, c.Version, c.Name, c.Config, c.Description))
		} else {
			result = "configured"
			out, err = scanConfig(tx.QueryRow(ctx, `
				UPDATE provider_configs SET config = $4, description = $5, revision = revision + 1, updated_at = now()
				WHERE kind = $1 AND kind_version = $2 AND name = $3
				  AND (config <> $4::jsonb OR description <> $5)
				RETURNING `+configColumns, c.Kind, c.Version, c.Name, c.Config, c.Description))
			if errors.Is(err, pgx.ErrNoRows) {
				result, out = "unchanged", prev
				return nil
			}
		}
		if err != nil {
			return err
		}
		after := maps.Clone(configs)
		after[c.Name] = out
		return requeueAfterWrite(ctx, tx, c.Kind, c.Version, configs, after,
			fmt.Sprintf("provider config %q revision %d", out.Name, out.Revision))
	})
	return out, result, err
}

// lockConfigKind locks the kind version against concurrent config writes
// (and kind re-applies), so the configs validated together stay the ones
// written together. Resource applies hold the kind row FOR KEY SHARE,
// which this lock does not wait for.
func lockConfigKind(ctx context.Context, tx pgx.Tx, kind string, version int32, v ConfigValidator) error {
	var revision int64
	err := tx.QueryRow(ctx, `SELECT revision FROM kinds WHERE kind = $1 AND kind_version = $2 FOR NO KEY UPDATE`,
		kind, version).Scan(&revision)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFoundf("kind %s v%d is not registered; apply its manifest first", kind, version)
	}
	if err != nil {
		return err
	}
	if revision != v.KindRevision {
		return fmt.Errorf("%w: %s v%d", ErrStaleKind, kind, version)
	}
	return nil
}

// readConfigs reads every config of a kind version, by name. Config
// writers hold the kind row (lockConfigKind), so no other writer changes
// them until commit.
func readConfigs(ctx context.Context, tx pgx.Tx, kind string, version int32) (map[string]ProviderConfig, error) {
	rows, err := tx.Query(ctx, `SELECT `+configColumns+` FROM provider_configs
		WHERE kind = $1 AND kind_version = $2 ORDER BY name`, kind, version)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]ProviderConfig{}
	for rows.Next() {
		c, err := scanConfig(rows)
		if err != nil {
			return nil, err
		}
		out[c.Name] = c
	}
	return out, rows.Err()
}

// validateWith checks c against the kind's schema given the other
// configs of its kind version; applying a default checks every named
// config against it too.
func validateWith(configs map[string]ProviderConfig, c ProviderConfig, v ConfigValidator) error {
	if c.Name != DefaultConfig {
		def, hasDefault := configs[DefaultConfig]
		effective, err := MergeConfig(def.Config, c.Config)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
		if err := v.Validate(effective); err != nil {
			if hasDefault {
				return fmt.Errorf("%w: %v (config %q merged onto the default config of %s v%d)",
					ErrInvalidConfig, err, c.Name, c.Kind, c.Version)
			}
			return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
		return nil
	}
	if err := v.Validate(c.Config); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	broken, err := brokenNamed(configs, c.Config, v)
	if err != nil {
		return err
	}
	if len(broken) > 0 {
		return fmt.Errorf("%w: this default config of %s v%d would break %s merged onto it: %s",
			ErrInvalidConfig, c.Kind, c.Version, countConfigs(len(broken)), listBroken(broken))
	}
	return nil
}

// brokenNamed lists, in name order, each named config that fails merged
// onto defaultConfig (nil: no default), with why.
func brokenNamed(configs map[string]ProviderConfig, defaultConfig []byte, v ConfigValidator) ([]string, error) {
	var names []string
	for name := range configs {
		if name != DefaultConfig {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var broken []string
	for _, name := range names {
		effective, err := MergeConfig(defaultConfig, configs[name].Config)
		if err != nil {
			return nil, err
		}
		if err := v.Validate(effective); err != nil {
			broken = append(broken, fmt.Sprintf("named config %q: %v", name, err))
		}
	}
	return broken, nil
}

func countConfigs(n int) string {
	if n == 1 {
		return "1 named config"
	}
	return fmt.Sprintf("%d named configs", n)
}

func listBroken(broken []string) string {
	if len(broken) > maxListedConfigs {
		more := len(broken) - maxListedConfigs
		broken = append(broken[:maxListedConfigs:maxListedConfigs], fmt.Sprintf("and %d more", more))
	}
	return strings.Join(broken, "; ")
}

// GetProviderConfig returns one provider config.
func (s *Store) GetProviderConfig(ctx context.Context, kind string, version int32, name string) (ProviderConfig, error) {
	c, err := scanConfig(s.db(ctx).QueryRow(ctx, `SELECT `+configColumns+` FROM provider_configs
		WHERE kind = $1 AND kind_version = $2 AND name = $3`, kind, version, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, notFoundf("provider config %q of kind %s v%d not found", name, kind, version)
	}
	return c, err
}

// ListProviderConfigs returns the provider configs of a kind version, of
// every version of a kind (version 0), or all of them (kind "").
func (s *Store) ListProviderConfigs(ctx context.Context, kind string, version int32) ([]ProviderConfig, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT `+configColumns+` FROM provider_configs
		WHERE ($1 = '' OR kind = $1) AND ($2 = 0 OR kind_version = $2)
		ORDER BY kind, kind_version, name`, kind, version)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (ProviderConfig, error) { return scanConfig(row) })
}

// DeleteProviderConfig removes a provider config. A named config is
// refused while resources use it; the default is refused while a named
// config would not be valid without it. A config whose kind version is
// gone is removed without checks.
func (s *Store) DeleteProviderConfig(ctx context.Context, kind string, version int32, name string, v ConfigValidator) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		kindErr := lockConfigKind(ctx, tx, kind, version, v)
		if kindErr != nil && !errors.Is(kindErr, ErrNotFound) {
			return kindErr
		}
		// FOR UPDATE waits out resource applies that hold the config FOR
		// KEY SHARE, so the usage count below sees their resources.
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM provider_configs WHERE kind = $1 AND kind_version = $2 AND name = $3
			FOR UPDATE`, kind, version, name).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFoundf("provider config %q of kind %s v%d not found", name, kind, version)
		}
		if err != nil {
			return err
		}
		configs, err := readConfigs(ctx, tx, kind, version)
		if err != nil {
			return err
		}
		if kindErr == nil {
			if err := checkConfigUnused(ctx, tx, kind, version, name, configs, v); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `DELETE FROM provider_configs WHERE kind = $1 AND kind_version = $2 AND name = $3`,
			kind, version, name)
		if err != nil || kindErr != nil {
			return err
		}
		after := maps.Clone(configs)
		delete(after, name)
		return requeueAfterWrite(ctx, tx, kind, version, configs, after,
			fmt.Sprintf("deleting provider config %q", name))
	})
}

// checkConfigUnused refuses deleting a config something still relies on.
func checkConfigUnused(ctx context.Context, tx pgx.Tx, kind string, version int32, name string,
	configs map[string]ProviderConfig, v ConfigValidator) error {
	if name == DefaultConfig {
		broken, err := brokenNamed(configs, nil, v)
		if err != nil {
			return err
		}
		if len(broken) > 0 {
			return conflictf("the default config of %s v%d cannot be deleted: %s would not be valid without it: %s",
				kind, version, countConfigs(len(broken)), listBroken(broken))
		}
		return nil
	}
	var n int64
	var example *string
	err := tx.QueryRow(ctx, `
		SELECT count(*), min(namespace || '/' || kind || '/' || name) FROM resources
		WHERE kind = $1 AND kind_version = $2 AND provider_config = $3`, kind, version, name).Scan(&n, &example)
	if err != nil {
		return err
	}
	if n > 0 {
		return conflictf("provider config %q of kind %s v%d is used by %d resource(s), e.g. %s; point them at another config first",
			name, kind, version, n, *example)
	}
	return nil
}

// configRef is a named provider config a resource refers to.
type configRef struct {
	kind    string
	version int32
	name    string
}

// lockProviderConfigs checks that every named provider config the inputs
// refer to exists at the input's kind version, and holds it FOR KEY
// SHARE until commit so it cannot be deleted under the apply.
func lockProviderConfigs(ctx context.Context, tx pgx.Tx, in []ApplyInput) error {
	seen := map[configRef]bool{}
	var kinds, names []string
	var versions []int32
	for _, a := range in {
		ref := configRef{a.Kind, a.KindVersion, a.ProviderConfig}
		if a.ProviderConfig == "" || seen[ref] {
			continue
		}
		seen[ref] = true
		kinds, versions, names = append(kinds, ref.kind), append(versions, ref.version), append(names, ref.name)
	}
	if len(kinds) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `
		SELECT c.kind, c.kind_version, c.name FROM provider_configs c
		JOIN unnest($1::text[], $2::int[], $3::text[]) AS i(kind, kind_version, name)
		  ON c.kind = i.kind AND c.kind_version = i.kind_version AND c.name = i.name
		ORDER BY c.kind, c.kind_version, c.name
		FOR KEY SHARE OF c`, kinds, versions, names)
	if err != nil {
		return err
	}
	found := map[configRef]bool{}
	for rows.Next() {
		var ref configRef
		if err := rows.Scan(&ref.kind, &ref.version, &ref.name); err != nil {
			rows.Close()
			return err
		}
		found[ref] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for i, a := range in {
		if a.ProviderConfig != "" && !found[configRef{a.Kind, a.KindVersion, a.ProviderConfig}] {
			return missingConfig(fmt.Sprintf("resources[%d].provider_config", i), a.Kind, a.KindVersion, a.ProviderConfig)
		}
	}
	return nil
}

// lockProviderConfig is lockProviderConfigs for one config; field names
// the request field in the error.
func lockProviderConfig(ctx context.Context, tx pgx.Tx, kind string, version int32, name, field string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM provider_configs WHERE kind = $1 AND kind_version = $2 AND name = $3
		FOR KEY SHARE`, kind, version, name).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return missingConfig(field, kind, version, name)
	}
	return err
}

func missingConfig(field, kind string, version int32, name string) error {
	return conflictf("%s: kind %s v%d has no provider config named %q; apply it first", field, kind, version, name)
}
