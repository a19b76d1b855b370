package jobmodel

import (
	"errors"
	"fmt"
	"time"
)

// DefaultAllocationPeriodDays is an allocation's period when none is given.
const DefaultAllocationPeriodDays = 365

// HoursAllocation is one allocation of resource-hours: Hours CPU-hours or
// GPU-hours per PeriodDays (e.g. 8,766 GPU-hours per 365 days = 1 GPU-year
// per year) for a cluster, optionally one account. It is the shape of the
// datasource's allocations setting and of the allocations the cluster-state
// collector serves (its constants file), so both decode it alike. (Not to be
// confused with Allocation, what a job holds on one node.)
type HoursAllocation struct {
	Cluster    string  `json:"cluster"`
	Account    string  `json:"account,omitempty"`
	Resource   string  `json:"resource"`
	Hours      float64 `json:"hours"`
	PeriodDays float64 `json:"periodDays,omitempty"`
	// Start is the start of the allocation period (RFC 3339 date);
	// default 1 January of the current year.
	Start string `json:"start,omitempty"`
}

// Check says what is wrong with an allocation, or nil. PeriodDays must be
// set (defaults are applied before).
func (a HoursAllocation) Check() error {
	switch {
	case a.Cluster == "":
		return errors.New("cluster is required")
	case a.Resource != "cpu" && a.Resource != "gpu":
		return fmt.Errorf("resource must be cpu or gpu, got %q", a.Resource)
	case a.Hours <= 0:
		return fmt.Errorf("hours must be positive, got %g", a.Hours)
	case a.PeriodDays < 1 || a.PeriodDays > 3660:
		return fmt.Errorf("periodDays must be between 1 and 3660, got %g", a.PeriodDays)
	}
	if a.Start != "" {
		if _, err := ParseAllocationStart(a.Start); err != nil {
			return err
		}
	}
	return nil
}

// ParseAllocationStart parses an allocation's start (a date or an RFC 3339
// time).
func ParseAllocationStart(s string) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("start %q is not a date (2026-01-01) or RFC 3339 time", s)
	}
	return t, nil
}
