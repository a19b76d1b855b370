package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/test/pluginhost"
)

// runOverGRPC sends every query type, in one request, to the built plugin
// executable running under the plugin host (go-plugin and the SDK's gRPC
// protocol, as Grafana runs it) and checks each answers frames without an
// error. The Grafana-side suite (test/grafana) does this for every
// dashboard, role and alert rule; this keeps the datasource test honest
// about the process boundary.
func runOverGRPC(t *testing.T, inst backend.DataSourceInstanceSettings, queries map[string]map[string]any) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	exe, err := pluginhost.Build(ctx, "../..", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h, err := pluginhost.Start(ctx, exe, pluginhost.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ds := pluginhost.Datasource{ID: 1, UID: inst.UID, Name: "Jobsight", JSONData: inst.JSONData, SecureJSONData: inst.DecryptedSecureJSONData}
	admin := pluginhost.Caller{User: &backend.User{Login: "admin", Role: "Admin"}}
	hr, err := h.CheckHealth(ctx, ds, admin)
	if err != nil || hr.Status != backend.HealthStatusOk {
		t.Fatalf("CheckHealth over gRPC: %v %v", err, hr)
	}
	now := time.Now()
	var refs []string
	var qs []pluginhost.Query
	for ref, m := range queries {
		refs = append(refs, ref)
		qs = append(qs, pluginhost.Query{RefID: ref, Model: m, From: now.Add(-30 * time.Minute), To: now, Interval: 10 * time.Second})
	}
	resp, err := h.QueryData(ctx, ds, admin, qs...)
	if err != nil {
		t.Fatalf("QueryData over gRPC: %v", err)
	}
	for _, ref := range refs {
		r, ok := resp.Responses[ref]
		if !ok {
			t.Errorf("%s: no response", ref)
			continue
		}
		if r.Error != nil {
			t.Errorf("%s over gRPC: %v", ref, r.Error)
			continue
		}
		rows := 0
		for _, f := range r.Frames {
			rows += f.Rows()
		}
		if len(r.Frames) == 0 || rows == 0 {
			t.Errorf("%s over gRPC: %d frames, %d rows", ref, len(r.Frames), rows)
			continue
		}
		if ref == "hogging" {
			if custom, _ := r.Frames[0].Meta.Custom.(map[string]any); fmt.Sprint(custom["contentionSignals"]) == "[]" {
				t.Errorf("hogging over gRPC: metadata %v", r.Frames[0].Meta.Custom)
			}
		}
	}
}
