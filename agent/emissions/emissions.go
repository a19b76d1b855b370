// Package emissions turns a job's energy into CO2-equivalent grams: a
// static table of average grid emission factors by country (table.go, with
// its source and year), a factor a site configures itself, or a live
// provider's carbon intensity for a zone, which falls back to the static
// factor — and says so in the document — when it cannot answer.
package emissions

import (
	"context"
	"fmt"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// ProviderStatic names the static factors in documents.
const ProviderStatic = "static"

// Factor is a grid emission factor and where it came from.
type Factor struct {
	GramsPerKWh float64
	Zone        string
	// Source cites the data (data set and year, or the live provider and
	// the time of its value).
	Source string
	// Provider is ProviderStatic or the live provider's name.
	Provider string
	// Fallback says why a configured live provider was not used.
	Fallback string
}

// StaticFactor is the built-in table's factor for zone; false when the
// zone is not in the table.
func StaticFactor(zone string) (Factor, bool) {
	e, ok := Lookup(zone)
	if !ok {
		return Factor{}, false
	}
	return Factor{GramsPerKWh: e.GramsPerKWh, Zone: zone, Provider: ProviderStatic,
		Source: fmt.Sprintf("%s %d (%s, average gCO2e/kWh of generation)", TableSource, e.Year, e.Name)}, true
}

// Provider is a live source of carbon intensity.
type Provider interface {
	// Name names the provider in documents.
	Name() string
	// Intensity returns the zone's current carbon intensity in gCO2e/kWh.
	Intensity(ctx context.Context, zone string) (float64, time.Time, error)
}

// Estimator gives the factor for a job's energy: the live provider's when
// one is configured and answers within Timeout, else Static.
type Estimator struct {
	Static  Factor
	Live    Provider // nil: static only
	Zone    string   // the live provider's zone
	Timeout time.Duration
}

// Factor returns the factor to use now. It never fails: a live provider
// that does not answer gives the static factor with Fallback set.
func (e *Estimator) Factor(ctx context.Context) Factor {
	if e.Live == nil {
		return e.Static
	}
	if e.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.Timeout)
		defer cancel()
	}
	v, at, err := e.Live.Intensity(ctx, e.Zone)
	if err != nil {
		f := e.Static
		f.Fallback = err.Error()
		return f
	}
	src := fmt.Sprintf("%s live carbon intensity for zone %s", e.Live.Name(), e.Zone)
	if !at.IsZero() {
		src += " at " + at.UTC().Format(time.RFC3339)
	}
	return Factor{GramsPerKWh: v, Zone: e.Zone, Source: src, Provider: e.Live.Name()}
}

// Apply sets u.Emissions from u.Energy's total and the factor; nothing when
// the energy total is unknown (emissions are then absent too).
func Apply(u *jobmodel.Usage, f Factor) {
	u.Emissions = nil
	if u.Energy == nil || u.Energy.TotalKWh == nil {
		return
	}
	u.Emissions = &jobmodel.Emissions{
		CO2eGrams:     jobmodel.Ptr(*u.Energy.TotalKWh * f.GramsPerKWh),
		FactorGPerKWh: jobmodel.Ptr(f.GramsPerKWh),
		Zone:          f.Zone, Source: f.Source, Provider: f.Provider, Fallback: f.Fallback,
	}
}
