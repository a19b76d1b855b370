package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
)

// Problem is one fault in one file.
type Problem struct {
	File  string // as given to the check, e.g. dashboards/my-jobs.json
	Where string // e.g. `panel "My jobs" (table): options.footer`, or `rule "x"`
	Msg   string
}

func (p *Problem) Error() string {
	switch {
	case p.Where == "":
		return p.File + ": " + p.Msg
	default:
		return p.File + ": " + p.Where + ": " + p.Msg
	}
}

// problems collects the problems of one file.
type problems struct {
	file string
	list []error
}

func (ps *problems) add(where, format string, a ...any) {
	ps.list = append(ps.list, &Problem{File: ps.file, Where: where, Msg: fmt.Sprintf(format, a...)})
}

// join appends a field name to a location ("panel x" + "options" =
// "panel x: options").
func join(where, field string) string {
	switch {
	case where == "":
		return field
	case field == "":
		return where
	default:
		return where + ": " + field
	}
}

// addBuild adds one problem per error of a strict SDK decoding. The SDK's
// paths name the JSON keys, ending with the Go type's name on an unexpected
// key ("options.Options: unexpected field 'x'"); that type name is dropped.
// rename turns a path prefix into a readable location (panels[3] into the
// panel's title), or returns "" to keep the path as it is.
func (ps *problems) addBuild(where string, err error, rename func(path string) (string, string)) {
	if sdkErr(err) == nil {
		return
	}
	var berrs cog.BuildErrors
	if !errors.As(err, &berrs) {
		ps.add(where, "%s", describeJSONError(err))
		return
	}
	for _, be := range berrs {
		path := cleanPath(be.Path)
		loc := where
		if rename != nil {
			if l, rest := rename(path); l != "" {
				loc, path = l, rest
			}
		}
		ps.add(join(loc, path), "%s", describeJSONError(errors.New(be.Message)))
	}
}

var typeNameSegment = regexp.MustCompile(`(^|\.)[A-Z][A-Za-z0-9]*$`)

func cleanPath(p string) string {
	return strings.TrimPrefix(typeNameSegment.ReplaceAllString(p, ""), ".")
}

// describeJSONError rewords encoding/json errors so they name the key.
func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("%s: a JSON %s where the schema wants %s", te.Field, te.Value, te.Type)
		}
		return fmt.Sprintf("a JSON %s where the schema wants %s", te.Value, te.Type)
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "json: unknown field ") {
		return "unexpected field " + strings.TrimPrefix(msg, "json: unknown field ")
	}
	return msg
}

// decodeExact decodes one JSON object into out, refusing keys out does not
// have. encoding/json matches keys case-insensitively even then; the keys
// are compared exactly first, so "jobid" is not taken for "jobId".
func decodeExact(raw []byte, out any) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return errors.New(describeJSONError(err))
	}
	allowed := jsonKeys(reflect.TypeOf(out))
	var errs []error
	var unknown []string
	for k := range keys {
		if !allowed[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		errs = append(errs, fmt.Errorf("unexpected field %q", k))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return errors.New(describeJSONError(err))
	}
	return nil
}

// jsonKeys lists the JSON keys of a struct type, embedded structs included.
func jsonKeys(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	out := map[string]bool{}
	if t.Kind() != reflect.Struct {
		return out
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			for k := range jsonKeys(f.Type) {
				out[k] = true
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = true
	}
	return out
}

// keysOf lists the sorted keys of a set, for messages.
func keysOf(m map[string]bool) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// sdkErr turns the SDK's "no errors" (an empty cog.BuildErrors, which its
// strict decoders return as a non-nil error) into nil.
func sdkErr(err error) error {
	var berrs cog.BuildErrors
	if errors.As(err, &berrs) && len(berrs) == 0 {
		return nil
	}
	return err
}
