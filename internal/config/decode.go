// Package config is what every product's configuration shares: strict
// YAML decoding whose errors name the option (DecodeStrict, LoadFile),
// sizes with units (ByteSize), the name rules (ValidClusterName,
// ValidIndexName), the one reader of secrets from files (ReadSecret), and
// one section type per store: Elasticsearch (and the job-history
// ElasticsearchConfig of the agent and the site command) and the
// Prometheus remote-write RemoteWrite. The agent (agent/config), the site
// command (internal/site/feedback) and the cluster-state collector
// (internal/site/clusterstate) each keep their own Config and embed these
// sections, so a store is configured with the same keys everywhere.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// LoadFile opens the configuration file path and decodes it with parse;
// errors name the file. The agent, the site command and the cluster-state
// collector load their files this way.
func LoadFile[T any](path string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	f, err := os.Open(path)
	if err != nil {
		return zero, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	c, err := parse(f)
	if err != nil {
		return zero, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes YAML from r over defaults, strictly (DecodeStrict), and
// validates the result: each product's Parse. A decoding error gives the
// zero configuration; a validation error gives the decoded one with it.
func Parse[T any, PT interface {
	*T
	Validate() error
}](r io.Reader, defaults T) (T, error) {
	c := defaults
	if err := DecodeStrict(r, &c); err != nil {
		var zero T
		return zero, err
	}
	return c, PT(&c).Validate()
}

// DecodeStrict decodes at most 1 MiB of YAML from r over v (which holds
// the defaults): an unknown key is an error naming it and its section.
// The section is named after the Go type holding the key, less a Config
// suffix (ElasticsearchConfig: section elasticsearch; a section embedded
// inline counts as the type it is embedded in); the products' top-level
// Config is the top level, and the Config of a section's own package
// (notify.Config) is named by its package.
func DecodeStrict(r io.Reader, v any) error {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return err
	}
	if len(data) > 1<<20 {
		return errors.New("larger than 1 MiB")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return cleanYAMLError(err)
	}
	return nil
}

// cleanYAMLError turns yaml.v3's messages about unknown fields into ones
// naming the option and its section ("line 3: unknown option "intervall"
// at the top level").
func cleanYAMLError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
	msg = unknownField.ReplaceAllStringFunc(msg, func(m string) string {
		sub := unknownField.FindStringSubmatch(m)
		where := "at the top level"
		sec := strings.ToLower(strings.TrimSuffix(sub[3], "Config"))
		if sec == "" && sub[2] != "config" && sub[2] != "feedback" && sub[2] != "clusterstate" {
			sec = sub[2] // a section with its own package: notify.Config
		}
		if sec != "" {
			where = "in section " + sec
		}
		return fmt.Sprintf("unknown option %q %s", sub[1], where)
	})
	return errors.New(strings.TrimSpace(msg))
}

var unknownField = regexp.MustCompile(`field (\S+) not found in type (\w+)\.(\w+)`)
