package emissions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrUnauthorized says the live provider refused the configured token.
var ErrUnauthorized = errors.New("the API token was refused: check emissions.live.token_file")

// maxIntensity bounds a plausible carbon intensity (the dirtiest grids are
// near 1,300 gCO2e/kWh).
const maxIntensity = 3000

// ElectricityMaps reads a zone's latest carbon intensity from an
// Electricity Maps–style JSON API:
//
//	GET <URL>/carbon-intensity/latest?zone=<zone>   (header auth-token)
//	{"zone":"DE","carbonIntensity":302,"datetime":"2024-05-21T10:00:00.000Z", ...}
type ElectricityMaps struct {
	// URL is the API's base, e.g. https://api.electricitymap.org/v3.
	URL    string
	Token  string
	Client *http.Client
}

// Name implements Provider.
func (e *ElectricityMaps) Name() string { return "electricitymaps" }

// Intensity implements Provider. Errors name what went wrong: no answer in
// time, a refused token (wrapping ErrUnauthorized), another HTTP status,
// or a body that is not the expected JSON.
func (e *ElectricityMaps) Intensity(ctx context.Context, zone string) (float64, time.Time, error) {
	u := strings.TrimRight(e.URL, "/") + "/carbon-intensity/latest?zone=" + url.QueryEscape(zone)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("electricitymaps: %w", err)
	}
	if e.Token != "" {
		req.Header.Set("auth-token", e.Token)
	}
	req.Header.Set("Accept", "application/json")
	client := e.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, time.Time{}, fmt.Errorf("electricitymaps: no answer in time for zone %s: %w", zone, ctx.Err())
		}
		return 0, time.Time{}, fmt.Errorf("electricitymaps: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("electricitymaps: reading the response: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return 0, time.Time{}, fmt.Errorf("electricitymaps: HTTP %d: %w", resp.StatusCode, ErrUnauthorized)
	case resp.StatusCode != http.StatusOK:
		return 0, time.Time{}, fmt.Errorf("electricitymaps: HTTP %d for zone %s: %.200s", resp.StatusCode, zone, strings.TrimSpace(string(body)))
	}
	var r struct {
		Zone            string   `json:"zone"`
		CarbonIntensity *float64 `json:"carbonIntensity"`
		Datetime        string   `json:"datetime"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return 0, time.Time{}, fmt.Errorf("electricitymaps: decoding the response for zone %s: %w", zone, err)
	}
	if r.CarbonIntensity == nil {
		return 0, time.Time{}, fmt.Errorf("electricitymaps: the response for zone %s has no carbonIntensity", zone)
	}
	v := *r.CarbonIntensity
	if v < 0 || v > maxIntensity || math.IsNaN(v) {
		return 0, time.Time{}, fmt.Errorf("electricitymaps: carbon intensity %v gCO2e/kWh for zone %s is not plausible", v, zone)
	}
	at, _ := time.Parse(time.RFC3339, r.Datetime)
	return v, at, nil
}
