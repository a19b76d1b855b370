package pluginhost

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"

	"gopkg.in/yaml.v3"

	"github.com/jobsight/jobsight/pkg/models"
)

// envRef is what Grafana's provisioning expands from its environment:
// $__env{NAME}, ${NAME} and $NAME. An unset variable becomes "".
var envRef = regexp.MustCompile(`\$__env\{(\w+)\}|\$\{(\w+)\}|\$(\w+)`)

// ExpandEnv expands s as Grafana's provisioning does, from env.
func ExpandEnv(s string, env map[string]string) string {
	return envRef.ReplaceAllStringFunc(s, func(m string) string {
		sub := envRef.FindStringSubmatch(m)
		return env[sub[1]+sub[2]+sub[3]]
	})
}

// expandValues expands every string in a decoded YAML value.
func expandValues(v any, env map[string]string) any {
	switch x := v.(type) {
	case string:
		return ExpandEnv(x, env)
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = expandValues(e, env)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = expandValues(e, env)
		}
		return out
	}
	return v
}

// Provisioned reads the Jobsight datasource from a datasource
// provisioning file as Grafana provisions it: placeholders expanded from
// env, jsonData stored as JSON, secureJsonData handed to the plugin
// decrypted.
func Provisioned(path string, env map[string]string) (Datasource, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Datasource{}, err
	}
	var f struct {
		Datasources []struct {
			Name           string            `yaml:"name"`
			Type           string            `yaml:"type"`
			UID            string            `yaml:"uid"`
			URL            string            `yaml:"url"`
			JSONData       map[string]any    `yaml:"jsonData"`
			SecureJSONData map[string]string `yaml:"secureJsonData"`
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		return Datasource{}, fmt.Errorf("%s: %w", path, err)
	}
	for i, d := range f.Datasources {
		if d.Type != models.PluginID {
			continue
		}
		raw, err := json.Marshal(expandValues(d.JSONData, env))
		if err != nil {
			return Datasource{}, fmt.Errorf("%s: jsonData: %w", path, err)
		}
		secure := map[string]string{}
		for k, v := range d.SecureJSONData {
			secure[k] = ExpandEnv(v, env)
		}
		return Datasource{ID: int64(i + 1), UID: d.UID, Name: d.Name, URL: ExpandEnv(d.URL, env),
			JSONData: raw, SecureJSONData: secure}, nil
	}
	return Datasource{}, fmt.Errorf("%s provisions no %s datasource", path, models.PluginID)
}
