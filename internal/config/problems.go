package config

import (
	"errors"
	"fmt"
)

// Problems collects what a Validate finds, each problem an error naming
// its option ("interval: 100ms is outside 1s..5m"), so that one run
// reports them all.
type Problems []error

// Add records a problem of option: the option, a colon, then format
// filled with args.
func (p *Problems) Add(option, format string, args ...any) {
	*p = append(*p, problem(option, format, args...))
}

// Err joins the problems into one error; nil when there are none.
func (p Problems) Err() error { return errors.Join(p...) }

// problem is a validation error naming its option.
func problem(option, format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{option}, args...)...)
}
