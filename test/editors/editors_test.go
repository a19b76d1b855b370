// Package editors proves the plugin's frontend editors in a real browser
// without Grafana, and proves that what they emit is what the Go backend
// reads. TestEditors builds the host page (npm run build:editors: the
// plugin's ConfigEditor, QueryEditor and VariableQueryEditor with the real
// @grafana/ui in Debian's Chromium; then again on React 19 and Grafana 13's
// libraries from compat/grafana13), runs the Playwright specs beside this
// file, which act as a person would and write every emission into a
// temporary directory, and decodes each one in the Go models
// (pkg/models): queries strictly and with ParseQuery, settings with
// ParseJSONData and, where a spec marked a finished state (a checkpoint),
// with Validate/LoadSettings.
package editors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/pkg/models"
	"github.com/jobsight/jobsight/test/stack"
)

func TestEditors(t *testing.T) {
	root := repoRoot(t)
	requireBrowserTools(t, root)

	// The page built against the main install (React 18, @grafana/* 12,
	// what the plugin is built with), then against compat/grafana13 (React
	// 19, @grafana/* 13: Grafana 13.2 runs plugins on React 19). The second
	// is skipped when that install is missing, and fails with CI=true.
	t.Run("react18-grafana12", func(t *testing.T) {
		runEditors(t, root, "build:editors", "")
	})
	t.Run("react19-grafana13", func(t *testing.T) {
		if !fileExists(filepath.Join(root, "compat", "grafana13", "node_modules", "react", "package.json")) {
			stack.Unavailable(t, "compat/grafana13/node_modules is missing: run npm ci --prefix compat/grafana13 in %s", root)
		}
		runEditors(t, root, "build:editors:react19", "dist-grafana13")
	})
}

// runEditors builds the host page with the npm script build, runs the specs
// against it (served from test/editors/<dist>, "" for dist) and decodes every
// emission in the Go models.
func runEditors(t *testing.T, root, build, dist string) {
	out := t.TempDir()
	run(t, root, nil, "npm", "run", build)
	env := []string{"JOBSIGHT_EDITOR_OUT=" + out}
	if dist != "" {
		env = append(env, "JOBSIGHT_EDITOR_DIST="+dist)
	}
	run(t, root, env, "npx", "playwright", "test", "--config", "test/editors/playwright.config.ts")

	files, err := filepath.Glob(filepath.Join(out, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("the specs wrote no emissions into %s (JOBSIGHT_EDITOR_OUT)", out)
	}
	sort.Strings(files)
	cov := newCoverage()
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkEmission(raw, cov); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
	if err := cov.complete(); err != nil {
		t.Error(err)
	}
	t.Logf("decoded %d emissions: %s", len(files), cov.summary())
}

// repoRoot is the directory with go.mod and package.json above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) && fileExists(filepath.Join(dir, "package.json")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod with package.json above the test directory")
		}
		dir = parent
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// requireBrowserTools skips (fails with CI=true) when Node, the installed
// npm packages or Chromium are missing.
func requireBrowserTools(t *testing.T, root string) {
	t.Helper()
	stack.Require(t, "node", "npm", "npx", "nice")
	for _, pkg := range []string{"@playwright/test", "webpack", "swc-loader", "@grafana/ui", "@grafana/data", "@grafana/runtime", "react-dom"} {
		if !fileExists(filepath.Join(root, "node_modules", pkg, "package.json")) {
			stack.Unavailable(t, "node_modules/%s is missing: run npm ci in %s", pkg, root)
		}
	}
	chromium := os.Getenv("JOBSIGHT_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if st, err := os.Stat(chromium); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		stack.Unavailable(t, "no Chromium at %s (Debian package chromium, or set JOBSIGHT_CHROMIUM)", chromium)
	}
}

// run runs a command in dir with extra environment, nicely (the machines are
// small and shared), and fails the test with the end of its output.
func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "nice", append([]string{name}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start).Round(time.Second)
	if err != nil {
		b := buf.Bytes()
		if len(b) > 20000 {
			b = b[len(b)-20000:]
		}
		t.Fatalf("%s %s failed after %s: %v\n%s", name, strings.Join(args, " "), took, err, b)
	}
	t.Logf("%s %s: %s", name, strings.Join(args, " "), took)
}

// emission is one file the specs write (test/editors/fixtures.ts, EmissionFile).
type emission struct {
	Seq         int             `json:"seq"`
	Editor      string          `json:"editor"`
	Event       string          `json:"event"`
	Value       json.RawMessage `json:"value"`
	Definition  *string         `json:"definition,omitempty"`
	Case        string          `json:"case"`
	Checkpoints []checkpoint    `json:"checkpoints,omitempty"`
}

// checkpoint marks a finished state: valid for the Go models, or invalid
// with an error containing ExpectError.
type checkpoint struct {
	Label       string `json:"label"`
	ExpectError string `json:"expectError,omitempty"`
}

// grafanaQuery is a query's JSON as Grafana stores and sends it: the
// plugin's model (models.Query) and Grafana's own keys, nothing else.
type grafanaQuery struct {
	models.Query
	RefID         string          `json:"refId"`
	Datasource    json.RawMessage `json:"datasource"`
	DatasourceID  *int64          `json:"datasourceId"`
	Hide          *bool           `json:"hide"`
	Key           string          `json:"key"`
	IntervalMs    *float64        `json:"intervalMs"`
	MaxDataPoints *int64          `json:"maxDataPoints"`
}

// grafanaSettings is a datasource's settings as Grafana's datasource page
// holds them (DataSourceSettings in @grafana/data): the plugin owns only
// jsonData and the secure keys.
type grafanaSettings struct {
	ID               int64             `json:"id"`
	UID              string            `json:"uid"`
	OrgID            int64             `json:"orgId"`
	Name             string            `json:"name"`
	TypeLogoURL      string            `json:"typeLogoUrl"`
	Type             string            `json:"type"`
	TypeName         string            `json:"typeName"`
	Access           string            `json:"access"`
	URL              string            `json:"url"`
	User             string            `json:"user"`
	Database         string            `json:"database"`
	BasicAuth        bool              `json:"basicAuth"`
	BasicAuthUser    string            `json:"basicAuthUser"`
	IsDefault        bool              `json:"isDefault"`
	JSONData         json.RawMessage   `json:"jsonData"`
	SecureJSONData   map[string]string `json:"secureJsonData"`
	SecureJSONFields map[string]bool   `json:"secureJsonFields"`
	ReadOnly         bool              `json:"readOnly"`
	WithCredentials  bool              `json:"withCredentials"`
	Version          int64             `json:"version"`
	AccessControl    json.RawMessage   `json:"accessControl"`
}

// secureKeys are the secure fields the backend reads (models.Secure*).
var secureKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range models.SecureFields {
		m[k] = true
	}
	return m
}()

// storedSecret stands for a secret Grafana has stored and would decrypt
// for the backend: the page only knows that it is configured.
const storedSecret = "stored-secret"

// strictDecode decodes raw into v, refusing unknown keys, keys that match
// a field only when case is ignored (encoding/json accepts "jobID" for
// "jobId"; the TypeScript side would not), and trailing data.
func strictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return err
	}
	return exactKeys(generic, reflect.TypeOf(v), "")
}

// exactKeys checks that every object key in v is spelt exactly as a json
// tag of the Go type t it decodes into, recursively.
func exactKeys(v any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeOf(json.RawMessage(nil)) {
		return nil
	}
	switch x := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			fields := jsonFields(t)
			for k, y := range x {
				ft, ok := fields[k]
				if !ok {
					return fmt.Errorf("json: unknown field %q at %s (a Go field matches it only when case is ignored)", k, orTop(path))
				}
				if err := exactKeys(y, ft, path+"."+k); err != nil {
					return err
				}
			}
		case reflect.Map:
			for k, y := range x {
				if err := exactKeys(y, t.Elem(), path+"."+k); err != nil {
					return err
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, y := range x {
				if err := exactKeys(y, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// jsonFields maps the JSON names of a struct's fields (embedded structs'
// fields promoted) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for k, ft := range jsonFields(f.Type) {
				out[k] = ft
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func orTop(path string) string {
	if path == "" {
		return "the top level"
	}
	return strings.TrimPrefix(path, ".")
}

// checkEmission decodes one emission file in the Go models and notes what it
// covered in cov.
func checkEmission(raw []byte, cov *coverage) error {
	var e emission
	if err := strictDecode(raw, &e); err != nil {
		return fmt.Errorf("not an emission file: %w", err)
	}
	where := fmt.Sprintf("%s %s #%d (%s)", e.Editor, e.Event, e.Seq, e.Case)
	var err error
	switch e.Editor {
	case "query", "variable":
		err = checkQuery(e, cov)
	case "config":
		err = checkSettings(e, cov)
	default:
		err = fmt.Errorf("unknown editor %q", e.Editor)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	cov.files[e.Editor]++
	return nil
}

func checkQuery(e emission, cov *coverage) error {
	if e.Event != "onChange" && (e.Editor == "variable" || e.Event != "onRunQuery") {
		return fmt.Errorf("unexpected event %q", e.Event)
	}
	var strict grafanaQuery
	if err := strictDecode(e.Value, &strict); err != nil {
		return fmt.Errorf("query JSON does not fit models.Query plus Grafana's keys: %w\n%s", err, e.Value)
	}
	q, err := models.ParseQuery(e.Value)
	if err != nil {
		return fmt.Errorf("models.ParseQuery: %w\n%s", err, e.Value)
	}
	if e.Editor == "variable" {
		if q.QueryType != models.QueryTypeVariable {
			return fmt.Errorf("a variable query with queryType %q\n%s", q.QueryType, e.Value)
		}
		if e.Definition == nil {
			return errors.New("the variable editor passed no definition")
		}
	}
	for _, c := range e.Checkpoints {
		err := q.Validate()
		if err := expect(c, err); err != nil {
			return fmt.Errorf("checkpoint %q: Validate: %w\n%s", c.Label, err, e.Value)
		}
		cov.checkpoints[e.Editor]++
		if c.ExpectError == "" {
			if e.Editor == "variable" {
				cov.variableKinds[q.Variable] = true
			} else {
				cov.queryTypes[q.QueryType] = true
			}
		}
	}
	return nil
}

func checkSettings(e emission, cov *coverage) error {
	if e.Event != "onOptionsChange" {
		return fmt.Errorf("unexpected event %q", e.Event)
	}
	var s grafanaSettings
	if err := strictDecode(e.Value, &s); err != nil {
		return fmt.Errorf("settings do not fit Grafana's DataSourceSettings: %w", err)
	}
	if _, err := models.ParseJSONData(s.JSONData); err != nil {
		return fmt.Errorf("models.ParseJSONData: %w\n%s", err, s.JSONData)
	}
	// ParseJSONData refuses unknown keys, but encoding/json matches keys
	// regardless of case: check the spelling too.
	if err := strictDecode(s.JSONData, &models.Settings{}); err != nil {
		return fmt.Errorf("jsonData does not fit models.Settings: %w\n%s", err, s.JSONData)
	}
	for k := range s.SecureJSONData {
		if !secureKeys[k] {
			return fmt.Errorf("secureJsonData key %q is not a secure field the backend reads", k)
		}
	}
	for k := range s.SecureJSONFields {
		if !secureKeys[k] {
			return fmt.Errorf("secureJsonFields key %q is not a secure field the backend reads", k)
		}
	}
	if err := secretsOutOfJSONData(s); err != nil {
		return err
	}
	for _, c := range e.Checkpoints {
		// What the backend gets: the typed secrets, and the stored ones
		// Grafana decrypts (configured and not replaced or reset).
		dec := map[string]string{}
		for k, v := range s.SecureJSONData {
			if v != "" {
				dec[k] = v
			}
		}
		for k, set := range s.SecureJSONFields {
			if _, typed := s.SecureJSONData[k]; set && !typed {
				dec[k] = storedSecret
			}
		}
		_, err := models.LoadSettings(backend.DataSourceInstanceSettings{
			UID: s.UID, Name: s.Name, JSONData: s.JSONData, DecryptedSecureJSONData: dec,
		})
		if err := expect(c, err); err != nil {
			return fmt.Errorf("checkpoint %q: LoadSettings: %w\n%s", c.Label, err, s.JSONData)
		}
		cov.checkpoints[e.Editor]++
	}
	return nil
}

// secretsOutOfJSONData fails when a secret's value appears in a jsonData
// string: a secret must reach the backend only as a secure field.
func secretsOutOfJSONData(s grafanaSettings) error {
	var data any
	if err := json.Unmarshal(s.JSONData, &data); err != nil {
		return err
	}
	var leak error
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, y := range x {
				if secureKeys[k] {
					leak = fmt.Errorf("jsonData has the secure key %q", k)
				}
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		case string:
			for k, secret := range s.SecureJSONData {
				if len(secret) >= 3 && strings.Contains(x, secret) {
					leak = fmt.Errorf("the value of secure field %s appears in jsonData", k)
				}
			}
		}
	}
	walk(data)
	return leak
}

// expect compares a validation result with a checkpoint's expectation.
func expect(c checkpoint, err error) error {
	switch {
	case c.ExpectError == "" && err != nil:
		return fmt.Errorf("want valid, got %w", err)
	case c.ExpectError != "" && err == nil:
		return fmt.Errorf("want an error containing %q, got none", c.ExpectError)
	case c.ExpectError != "" && !strings.Contains(err.Error(), c.ExpectError):
		return fmt.Errorf("want an error containing %q, got %w", c.ExpectError, err)
	}
	return nil
}

// coverage is what the emissions covered; complete says what is missing.
type coverage struct {
	files         map[string]int
	checkpoints   map[string]int
	queryTypes    map[models.QueryType]bool
	variableKinds map[string]bool
}

func newCoverage() *coverage {
	return &coverage{files: map[string]int{}, checkpoints: map[string]int{},
		queryTypes: map[models.QueryType]bool{}, variableKinds: map[string]bool{}}
}

func (c *coverage) complete() error {
	var missing []string
	for _, ed := range []string{"config", "query", "variable"} {
		if c.files[ed] == 0 {
			missing = append(missing, fmt.Sprintf("no emissions from the %s editor", ed))
		}
		if c.checkpoints[ed] == 0 {
			missing = append(missing, fmt.Sprintf("no checkpoints of the %s editor", ed))
		}
	}
	for _, qt := range models.KnownQueryTypes() {
		if !c.queryTypes[qt] {
			missing = append(missing, fmt.Sprintf("no valid %s query from the query editor", qt))
		}
	}
	for _, k := range []string{models.VariableClusters, models.VariableUsers, models.VariableAccounts,
		models.VariablePartitions, models.VariableJobs} {
		if !c.variableKinds[k] {
			missing = append(missing, fmt.Sprintf("no valid %s variable from the variable editor", k))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the specs left out: %s", strings.Join(missing, "; "))
	}
	return nil
}

func (c *coverage) summary() string {
	return fmt.Sprintf("config %d (%d checkpoints), query %d (%d), variable %d (%d)",
		c.files["config"], c.checkpoints["config"], c.files["query"], c.checkpoints["query"],
		c.files["variable"], c.checkpoints["variable"])
}
