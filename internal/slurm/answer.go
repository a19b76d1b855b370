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

// Meta is what an answer says about the Slurm that gave it.
type Meta struct {
	Slurm struct {
		Release string `json:"release"` // e.g. "22.05.8"
	} `json:"Slurm"`
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
	if err := json.Unmarshal(out, a); err != nil {
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
