package schema

import (
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// builtinVariables are the variables Grafana defines itself: the global
// ones (time range, interval, dashboard, user, org, URL) and the data-link
// ones (__data, __value, __field, __series, __cell). A reference to any
// other name starting with __ is an error like an undefined variable.
var builtinVariables = map[string]bool{
	"__interval": true, "__interval_ms": true, "__rate_interval": true, "__rate_interval_ms": true,
	"__range": true, "__range_s": true, "__range_ms": true,
	"__from": true, "__to": true, "__now": true, "__timezone": true,
	"__dashboard": true, "__org": true, "__user": true, "__url": true, "__url_time_range": true,
	"__all_variables": true, "__searchFilter": true,
	"__data": true, "__value": true, "__field": true, "__series": true, "__cell": true,
}

var cellN = regexp.MustCompile(`^__cell_[0-9]+$`)

// variableFormats are the ${var:format} formats Grafana knows (the first
// word; date takes more after a colon).
var variableFormats = map[string]bool{
	"csv": true, "distributed": true, "doublequote": true, "glob": true, "json": true,
	"lucene": true, "percentencode": true, "pipe": true, "raw": true, "regex": true,
	"singlequote": true, "sqlstring": true, "text": true, "queryparam": true, "date": true,
}

// varRef finds variable references as Grafana's template service does:
// $name, [[name]] or [[name:format]], ${name}, ${name.path} and
// ${name:format}.
var varRef = regexp.MustCompile(`\$\{(\w+)((?:\.[^:}]+)?)(?::([^}]*))?\}|\[\[(\w+)(?::(\w+))?\]\]|\$(\w+)`)

type varUse struct {
	text, name, format string
}

func findVarRefs(s string) []varUse {
	var out []varUse
	for _, m := range varRef.FindAllStringSubmatch(s, -1) {
		u := varUse{text: m[0]}
		switch {
		case m[1] != "":
			u.name, u.format = m[1], m[3]
		case m[4] != "":
			u.name, u.format = m[4], m[5]
		default:
			u.name = m[6]
		}
		if isDigits(u.name) {
			continue // $1 in a regex replacement, not a variable
		}
		out = append(out, u)
	}
	return out
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// checkVarRefs reports every reference in s to a variable the dashboard
// does not define, and every unknown format.
func (ps *problems) checkVarRefs(where, field, s string, defined map[string]bool) {
	for _, u := range findVarRefs(s) {
		switch {
		case defined[u.name]:
		case strings.HasPrefix(u.name, "__"):
			if !builtinVariables[u.name] && !cellN.MatchString(u.name) {
				ps.add(join(where, field), "%s names %s, which is not a Grafana built-in variable (%s)", quote(s), u.text, keysOf(builtinVariables))
			}
		default:
			own := map[string]bool{}
			for k := range defined {
				if !strings.HasPrefix(k, "__") {
					own[k] = true
				}
			}
			ps.add(join(where, field), "%s names variable %s, which the dashboard does not define (it defines: %s)", quote(s), u.text, keysOf(own))
		}
		if u.format != "" {
			f, _, _ := strings.Cut(u.format, ":")
			if !variableFormats[f] {
				ps.add(join(where, field), "%s uses the format %q, which Grafana does not know (one of %s)", quote(s), u.format, keysOf(variableFormats))
			}
		}
	}
}

// checkVarRefsJSON checks every string inside a JSON value, naming its
// path below field.
func (ps *problems) checkVarRefsJSON(where, field string, raw json.RawMessage, defined map[string]bool) {
	if len(raw) == 0 {
		return
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return // the strict decoding reports it
	}
	walkStrings(field, v, func(path, s string) { ps.checkVarRefs(where, path, s, defined) })
}

// walkStrings calls f on every string in v with its path, in a stable
// order.
func walkStrings(path string, v any, f func(path, s string)) {
	switch x := v.(type) {
	case string:
		f(path, x)
	case []any:
		for i, el := range x {
			walkStrings(path+"["+itoa(i)+"]", el, f)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			walkStrings(p, x[k], f)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// quote shortens a string for a message.
func quote(s string) string {
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return strconv.Quote(s)
}
