package slurm

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Envelope is what every JSON answer of Slurm's client commands holds
// besides its list (SinfoAnswer's nodes, SqueueAnswer's jobs).
type Envelope struct {
	Meta Meta `json:"meta"`
	// Errors are the errors Slurm reported, as it wrote them.
	Errors []json.RawMessage `json:"errors"`
}

// Meta is what an answer says about the Slurm that gave it: v0.0.38
// writes {"plugin": {"type": "openapi/v0.0.38"}, "Slurm": {"release":
// "22.05.8"}}, later versions {"plugin": {"data_parser":
// "data_parser/v0.0.45"}, "slurm": {"release": "26.05.3", "version":
// {...}}}. Release and DataParser are empty when the answer does not say.
type Meta struct {
	Release    string
	DataParser string
}

// UnmarshalJSON reads the meta object of any supported version; a part of
// an unknown shape is left empty.
func (m *Meta) UnmarshalJSON(b []byte) error {
	var r record
	if err := r.init(b); err != nil {
		return nil // an unreadable meta says nothing; the answer stands
	}
	*m = Meta{}
	for _, key := range []string{"slurm", "Slurm"} {
		if s := r.sub(key); s != nil {
			if m.Release = s.str("release"); m.Release == "" {
				if v := s.sub("version"); v != nil {
					maj, min, mic := v.str("major"), v.str("minor"), v.str("micro")
					if maj != "" && min != "" {
						m.Release = maj + "." + min + "." + mic
					}
				}
			}
			break
		}
	}
	if p := r.sub("plugin"); p != nil {
		if m.DataParser = p.str("data_parser"); m.DataParser == "" {
			m.DataParser = p.str("type") // "openapi/v0.0.38"
		}
	}
	return nil
}

// String names the Slurm release and data parser ("Slurm 26.05.3,
// data_parser/v0.0.45"), or says they are unknown.
func (m Meta) String() string {
	rel, dp := m.Release, m.DataParser
	if rel == "" {
		rel = "of unknown release"
	}
	if dp == "" {
		dp = "unknown data parser"
	}
	return "Slurm " + rel + ", " + dp
}

// answer is a decoded answer: its envelope, and whether it held its list.
type answer interface {
	envelope() *Envelope
	listed() bool
}

func (e *Envelope) envelope() *Envelope { return e }

// decodeAnswer decodes the output of command ("sinfo --json") as an A.
// Malformed JSON is an error naming the command; so is an answer without
// its list (named list), quoting the first error Slurm reported, if any.
func decodeAnswer[A any, PA interface {
	*A
	answer
}](command, list string, out []byte) (*A, error) {
	a := PA(new(A))
	var err error
	if d, ok := any(a).(interface{ decode([]byte) error }); ok {
		err = d.decode(out)
	} else {
		err = json.Unmarshal(out, a)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", command, err)
	}
	if !a.listed() {
		if errs := a.envelope().Errors; len(errs) > 0 {
			return nil, fmt.Errorf("%s reported errors: %s", command, clip(string(errs[0])))
		}
		return nil, errors.New(command + `: the answer has no "` + list + `" list`)
	}
	return a, nil
}
