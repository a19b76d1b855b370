package clusterstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// Constants is the allocations-and-constants document the collector serves
// at /constants and the datasource's Allocation query reads
// (models.Settings.AllocationsURL). Allocations have exactly the shape of
// the datasource's own allocations setting.
type Constants struct {
	Allocations []jobmodel.HoursAllocation `json:"allocations"`
	// Constants are other site numbers (e.g. "users": 120), by name.
	Constants map[string]any `json:"constants"`
}

// constantName is what a constant may be called.
var constantName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)

// defaultPeriodDays is an allocation's period when the file gives none, as
// in the datasource.
const defaultPeriodDays = 365

// ParseConstants reads a constants file (YAML, or JSON, which is YAML):
//
//	allocations:
//	  - {cluster: c, account: a, resource: gpu, hours: 8766, periodDays: 365, start: "2026-01-01"}
//	constants:
//	  users: 120
//
// Unknown keys, a malformed allocation (jobmodel.HoursAllocation.Check), a
// duplicate allocation or a badly named constant are errors naming the
// field ("allocations[2].hours: ...").
func ParseConstants(r io.Reader) (Constants, error) {
	data, err := io.ReadAll(io.LimitReader(r, 4<<20+1))
	if err != nil {
		return Constants{}, err
	}
	if len(data) > 4<<20 {
		return Constants{}, errors.New("larger than 4 MiB")
	}
	var raw any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return Constants{}, fmt.Errorf("not YAML or JSON: %w", err)
	}
	if raw == nil {
		return Constants{Allocations: []jobmodel.HoursAllocation{}, Constants: map[string]any{}}, nil
	}
	raw = plainDates(raw)
	// Through JSON, so that keys are the datasource's (periodDays) and
	// decoding is the same for YAML and JSON files.
	js, err := json.Marshal(raw)
	if err != nil {
		return Constants{}, fmt.Errorf("converting to JSON: %w", err)
	}
	var top struct {
		Allocations []json.RawMessage `json:"allocations"`
		Constants   map[string]any    `json:"constants"`
	}
	if err := strictJSON(js, &top); err != nil {
		return Constants{}, err
	}
	c := Constants{Allocations: make([]jobmodel.HoursAllocation, 0, len(top.Allocations)), Constants: top.Constants}
	if c.Constants == nil {
		c.Constants = map[string]any{}
	}
	var errs []error
	seen := map[string]int{}
	for i, m := range top.Allocations {
		field := fmt.Sprintf("allocations[%d]", i)
		var a jobmodel.HoursAllocation
		if err := strictJSON(m, &a); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
			continue
		}
		if a.PeriodDays == 0 {
			a.PeriodDays = defaultPeriodDays
		}
		if err := a.Check(); err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", field, err))
			continue
		}
		key := strings.Join([]string{a.Cluster, a.Account, a.Resource, a.Start}, "\x00")
		if j, dup := seen[key]; dup {
			errs = append(errs, fmt.Errorf("%s: the same cluster %q, account %q, resource %q and start %q as allocations[%d]",
				field, a.Cluster, a.Account, a.Resource, a.Start, j))
			continue
		}
		seen[key] = i
		c.Allocations = append(c.Allocations, a)
	}
	for k := range c.Constants {
		if !constantName.MatchString(k) {
			errs = append(errs, fmt.Errorf("constants.%s: a name is letters, digits, '_', '.' or '-', starting with a letter or '_'", k))
		}
	}
	return c, errors.Join(errs...)
}

// plainDates turns the dates YAML reads from unquoted 2026-01-01 back into
// such strings (a time at midnight UTC) or RFC 3339 times.
func plainDates(v any) any {
	switch x := v.(type) {
	case time.Time:
		if x.Equal(x.Truncate(24*time.Hour)) && x.Location() == time.UTC {
			return x.Format("2006-01-02")
		}
		return x.Format(time.RFC3339)
	case map[string]any:
		for k, e := range x {
			x[k] = plainDates(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plainDates(e)
		}
	}
	return v
}

// strictJSON decodes one JSON value into v, refusing unknown fields; the
// error names the field.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("%s: want %s, got %s", te.Field, te.Type, te.Value)
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("%s: unknown field", strings.Trim(msg, `"`))
	}
	return err
}

// ConstantsFile serves a constants file, re-reading it when it changes; a
// change that does not parse is logged and the last good content stays.
type ConstantsFile struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	mod     time.Time
	size    int64
	current []byte // the JSON served
	lastErr error
}

// OpenConstants reads path (empty: an empty document). A file that does
// not parse is an error naming the file and the field.
func OpenConstants(path string, log *slog.Logger) (*ConstantsFile, error) {
	f := &ConstantsFile{path: path, log: log}
	if path == "" {
		f.current, _ = json.Marshal(Constants{Allocations: []jobmodel.HoursAllocation{}, Constants: map[string]any{}})
		return f, nil
	}
	if err := f.reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// reload reads the file if it changed since the last read.
func (f *ConstantsFile) reload() error {
	fi, err := os.Stat(f.path)
	if err != nil {
		return fmt.Errorf("constants_file: %w", err)
	}
	if f.current != nil && fi.ModTime().Equal(f.mod) && fi.Size() == f.size {
		return nil
	}
	r, err := os.Open(f.path)
	if err != nil {
		return fmt.Errorf("constants_file: %w", err)
	}
	defer r.Close()
	c, err := ParseConstants(r)
	if err != nil {
		return fmt.Errorf("constants_file %s: %w", f.path, err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("constants_file %s: %w", f.path, err)
	}
	f.mod, f.size, f.current = fi.ModTime(), fi.Size(), b
	return nil
}

// JSON returns the document to serve, re-reading the file if it changed.
func (f *ConstantsFile) JSON() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.path != "" {
		err := f.reload()
		if err != nil && (f.lastErr == nil || f.lastErr.Error() != err.Error()) {
			f.log.Error("constants file changed but cannot be used; serving its last good content", "err", err)
		}
		f.lastErr = err
	}
	return f.current
}

// ServeHTTP answers GET /constants with the JSON document.
func (f *ConstantsFile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=60")
	_, _ = w.Write(f.JSON())
}
