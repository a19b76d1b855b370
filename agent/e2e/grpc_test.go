package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/grpcplugin"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	goplugin "github.com/hashicorp/go-plugin"
)

// pluginClient starts the built plugin executable the way Grafana does
// (hashicorp/go-plugin over gRPC, the SDK's handshake) and returns its
// data and diagnostics clients.
func pluginClient(t *testing.T) (pluginv2.DataClient, pluginv2.DiagnosticsClient) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gpx_jobsight_linux_amd64")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./pkg")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the plugin: %v\n%s", err, out)
	}
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig: goplugin.HandshakeConfig{ProtocolVersion: grpcplugin.ProtocolVersion,
			MagicCookieKey: grpcplugin.MagicCookieKey, MagicCookieValue: grpcplugin.MagicCookieValue},
		VersionedPlugins: map[int]goplugin.PluginSet{grpcplugin.ProtocolVersion: {
			"data":        &grpcplugin.DataGRPCPlugin{},
			"diagnostics": &grpcplugin.DiagnosticsGRPCPlugin{},
		}},
		Cmd:              exec.Command(bin),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		SyncStderr:       os.Stderr,
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("starting the plugin: %v", err)
	}
	d, err := rpc.Dispense("data")
	if err != nil {
		t.Fatal(err)
	}
	h, err := rpc.Dispense("diagnostics")
	if err != nil {
		t.Fatal(err)
	}
	return d.(pluginv2.DataClient), h.(pluginv2.DiagnosticsClient)
}

// runOverGRPC sends every query type to the plugin executable and checks
// each answers frames without an error.
func runOverGRPC(t *testing.T, inst backend.DataSourceInstanceSettings, queries map[string]map[string]any) {
	dataClient, diag := pluginClient(t)
	pc := &pluginv2.PluginContext{OrgId: 1, PluginId: "jobsight-slurm-datasource",
		User: &pluginv2.User{Login: "admin", Role: "Admin"},
		DataSourceInstanceSettings: &pluginv2.DataSourceInstanceSettings{Id: 1, Uid: inst.UID, Name: "Jobsight",
			JsonData: inst.JSONData, DecryptedSecureJsonData: inst.DecryptedSecureJSONData, LastUpdatedMS: time.Now().UnixMilli()}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hr, err := diag.CheckHealth(ctx, &pluginv2.CheckHealthRequest{PluginContext: pc})
	if err != nil || hr.Status != pluginv2.CheckHealthResponse_OK {
		t.Fatalf("CheckHealth over gRPC: %v %v %s", err, hr.GetStatus(), hr.GetMessage())
	}
	now := time.Now()
	req := &pluginv2.QueryDataRequest{PluginContext: pc}
	for ref, m := range queries {
		raw, _ := json.Marshal(m)
		req.Queries = append(req.Queries, &pluginv2.DataQuery{RefId: ref, Json: raw, MaxDataPoints: 300,
			QueryType: m["queryType"].(string), IntervalMS: 10000,
			TimeRange: &pluginv2.TimeRange{FromEpochMS: now.Add(-30 * time.Minute).UnixMilli(), ToEpochMS: now.UnixMilli()}})
	}
	resp, err := dataClient.QueryData(ctx, req)
	if err != nil {
		t.Fatalf("QueryData over gRPC: %v", err)
	}
	for ref := range queries {
		r := resp.Responses[ref]
		if r == nil {
			t.Errorf("%s: no response", ref)
			continue
		}
		if r.Error != "" {
			t.Errorf("%s over gRPC: %s", ref, r.Error)
			continue
		}
		frames, err := data.UnmarshalArrowFrames(r.Frames)
		if err != nil {
			t.Errorf("%s: frames do not decode: %v", ref, err)
			continue
		}
		rows := 0
		for _, f := range frames {
			rows += f.Rows()
		}
		if len(frames) == 0 || rows == 0 {
			t.Errorf("%s over gRPC: %d frames, %d rows", ref, len(frames), rows)
			continue
		}
		if ref == "hogging" {
			if custom, _ := frames[0].Meta.Custom.(map[string]any); fmt.Sprint(custom["contentionSignals"]) == "[]" {
				t.Errorf("hogging over gRPC: metadata %v", frames[0].Meta.Custom)
			}
		}
	}
}
