package emissions

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

func TestLookup(t *testing.T) {
	t.Parallel()
	for zone, want := range map[string]float64{"DE": 380.95, "deu": 380.95, "FR": 56.04, "US-CAL-CISO": 385.98, "world": 485.99} {
		e, ok := Lookup(zone)
		if !ok || e.GramsPerKWh != want {
			t.Errorf("%s: %+v, %v; want %v", zone, e, ok, want)
		}
	}
	for _, zone := range []string{"", "ZZ", "-DE", "Germany"} {
		if _, ok := Lookup(zone); ok {
			t.Errorf("%q found", zone)
		}
	}
	seen := map[string]bool{}
	for _, e := range Table {
		if seen[e.Alpha2] || (e.Alpha3 != "" && seen[e.Alpha3]) || e.GramsPerKWh <= 0 || e.Year < 2021 {
			t.Errorf("bad or repeated entry %+v", e)
		}
		seen[e.Alpha2], seen[e.Alpha3] = true, true
	}
	f, _ := StaticFactor("DE")
	if !strings.Contains(f.Source, "Ember") || !strings.Contains(f.Source, "2023") || f.Provider != ProviderStatic {
		t.Errorf("static factor %+v does not cite its source and year", f)
	}
}

// emaps serves an Electricity Maps–style API from a handler.
func emaps(t *testing.T, h http.HandlerFunc) *ElectricityMaps {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &ElectricityMaps{URL: srv.URL + "/v3", Token: "tok", Client: srv.Client()}
}

func TestElectricityMaps(t *testing.T) {
	t.Parallel()
	e := emaps(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v3/carbon-intensity/latest" || r.URL.Query().Get("zone") != "DE" || r.Header.Get("auth-token") != "tok" {
			http.Error(w, "bad request "+r.URL.String(), http.StatusBadRequest)
			return
		}
		w.Write([]byte(`{"zone":"DE","carbonIntensity":302,"datetime":"2026-05-21T10:00:00.000Z","updatedAt":"x","emissionFactorType":"lifecycle"}`))
	})
	v, at, err := e.Intensity(context.Background(), "DE")
	if err != nil || v != 302 || at.Year() != 2026 {
		t.Fatalf("intensity %v at %v, %v", v, at, err)
	}
}

func TestElectricityMapsErrorsAreClear(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		h    http.HandlerFunc
		want string
	}{
		"unauthorized": {func(w http.ResponseWriter, _ *http.Request) { http.Error(w, `{"error":"bad token"}`, 401) }, "token was refused"},
		"forbidden":    {func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", 403) }, "HTTP 403"},
		"server error": {func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "zone unavailable", 502) }, "HTTP 502 for zone DE: zone unavailable"},
		"bad json":     {func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"carbonIntensity":`)) }, "decoding the response"},
		"no value":     {func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"zone":"DE"}`)) }, "no carbonIntensity"},
		"implausible":  {func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"carbonIntensity":-4}`)) }, "not plausible"},
		"timeout": {func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, "no answer in time"},
	}
	for name, c := range cases {
		e := emaps(t, c.h)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, _, err := e.Intensity(ctx, "DE")
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one saying %q", name, err, c.want)
		}
		if name == "unauthorized" && !errors.Is(err, ErrUnauthorized) {
			t.Errorf("unauthorized: %v does not wrap ErrUnauthorized", err)
		}
	}
}

// A live provider that fails gives the static factor, and the document
// names the fallback and why.
func TestEstimatorFallsBackToStatic(t *testing.T) {
	t.Parallel()
	static, _ := StaticFactor("DE")
	bad := emaps(t, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "", 401) })
	e := &Estimator{Static: static, Live: bad, Zone: "DE", Timeout: time.Second}
	f := e.Factor(context.Background())
	if f.GramsPerKWh != 380.95 || f.Provider != ProviderStatic || !strings.Contains(f.Fallback, "401") {
		t.Fatalf("factor %+v", f)
	}
	good := emaps(t, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"carbonIntensity":120.5}`)) })
	e.Live = good
	f = e.Factor(context.Background())
	if f.GramsPerKWh != 120.5 || f.Provider != "electricitymaps" || f.Fallback != "" || !strings.Contains(f.Source, "zone DE") {
		t.Fatalf("live factor %+v", f)
	}

	u := jobmodel.Usage{Energy: &jobmodel.EnergyUsage{TotalKWh: jobmodel.Ptr(2.0)}}
	Apply(&u, e.Factor(context.Background()))
	if u.Emissions == nil || *u.Emissions.CO2eGrams != 241 || *u.Emissions.FactorGPerKWh != 120.5 {
		t.Fatalf("emissions %+v", u.Emissions)
	}
	u = jobmodel.Usage{}
	Apply(&u, f)
	if u.Emissions != nil {
		t.Fatal("emissions without energy")
	}
}
