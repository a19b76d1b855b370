package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/grafana/grafana-foundation-sdk/go/annotationslist"
	"github.com/grafana/grafana-foundation-sdk/go/barchart"
	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/candlestick"
	"github.com/grafana/grafana-foundation-sdk/go/canvas"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/dashboardlist"
	"github.com/grafana/grafana-foundation-sdk/go/gauge"
	"github.com/grafana/grafana-foundation-sdk/go/geomap"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/histogram"
	"github.com/grafana/grafana-foundation-sdk/go/logs"
	"github.com/grafana/grafana-foundation-sdk/go/news"
	"github.com/grafana/grafana-foundation-sdk/go/nodegraph"
	"github.com/grafana/grafana-foundation-sdk/go/piechart"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/statushistory"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/text"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/grafana/grafana-foundation-sdk/go/trend"
	"github.com/grafana/grafana-foundation-sdk/go/xychart"

	"github.com/jobsight/jobsight/pkg/models"
)

// SDKVersion is the foundation SDK version the schemas come from (go.mod).
const SDKVersion = "v0.0.22"

// JobsightType and PrometheusType are the datasource plugin types the
// dashboards and rules may use.
const (
	JobsightType   = models.PluginID
	PrometheusType = "prometheus"
)

// panelSchema is one panel type's schema in the SDK: its variant (strict
// decoders of options and fieldConfig.defaults.custom) and its defaults.
type panelSchema struct {
	config  variants.PanelcfgConfig
	options any // NewOptions()
	custom  any // NewFieldConfig(); nil where the panel has no custom field config
}

// panelSchemas are the panel types a dashboard may use: core panels that
// Grafana 11, 12 and 13 all ship, none of them Angular, each with its
// schema in the foundation SDK. Left out on purpose: the SDK's datagrid
// (experimental, not in every release) and debug (a developer panel).
// "row" is not a panel plugin; the dashboard schema has its own RowPanel.
func panelSchemas() map[string]panelSchema {
	return map[string]panelSchema{
		"annolist":       {annotationslist.VariantConfig(), annotationslist.NewOptions(), nil},
		"barchart":       {barchart.VariantConfig(), barchart.NewOptions(), barchart.NewFieldConfig()},
		"bargauge":       {bargauge.VariantConfig(), bargauge.NewOptions(), nil},
		"candlestick":    {candlestick.VariantConfig(), candlestick.NewOptions(), candlestick.NewFieldConfig()},
		"canvas":         {canvas.VariantConfig(), canvas.NewOptions(), nil},
		"dashlist":       {dashboardlist.VariantConfig(), dashboardlist.NewOptions(), nil},
		"gauge":          {gauge.VariantConfig(), gauge.NewOptions(), nil},
		"geomap":         {geomap.VariantConfig(), geomap.NewOptions(), nil},
		"heatmap":        {heatmap.VariantConfig(), heatmap.NewOptions(), heatmap.NewFieldConfig()},
		"histogram":      {histogram.VariantConfig(), histogram.NewOptions(), histogram.NewFieldConfig()},
		"logs":           {logs.VariantConfig(), logs.NewOptions(), nil},
		"news":           {news.VariantConfig(), news.NewOptions(), nil},
		"nodeGraph":      {nodegraph.VariantConfig(), nodegraph.NewOptions(), nil},
		"piechart":       {piechart.VariantConfig(), piechart.NewOptions(), piechart.NewFieldConfig()},
		"stat":           {stat.VariantConfig(), stat.NewOptions(), nil},
		"state-timeline": {statetimeline.VariantConfig(), statetimeline.NewOptions(), statetimeline.NewFieldConfig()},
		"status-history": {statushistory.VariantConfig(), statushistory.NewOptions(), statushistory.NewFieldConfig()},
		"table":          {table.VariantConfig(), table.NewOptions(), table.NewFieldConfig()},
		"text":           {text.VariantConfig(), text.NewOptions(), nil},
		"timeseries":     {timeseries.VariantConfig(), timeseries.NewOptions(), timeseries.NewFieldConfig()},
		"trend":          {trend.VariantConfig(), trend.NewOptions(), trend.NewFieldConfig()},
		"xychart":        {xychart.VariantConfig(), xychart.NewOptions(), xychart.NewFieldConfig()},
	}
}

// corePanelsWithoutSchema are core Grafana 11–13 panels the SDK has no
// schema for: their options cannot be checked, so a dashboard using one
// fails until this checker is given a schema for it.
var corePanelsWithoutSchema = map[string]bool{"alertlist": true, "flamegraph": true, "traces": true}

// removedPanels are panel types Grafana 11 and later no longer run
// (Angular panels, removed or migrated on load), with what replaces them.
var removedPanels = map[string]string{
	"graph":                     "timeseries (Angular graph panel, removed in Grafana 11)",
	"singlestat":                "stat (Angular, removed)",
	"grafana-singlestat-panel":  "stat (Angular, removed)",
	"table-old":                 "table (Angular, removed)",
	"grafana-piechart-panel":    "piechart (Angular plugin)",
	"grafana-worldmap-panel":    "geomap (Angular plugin)",
	"heatmap-old":               "heatmap (Angular, removed)",
	"grafana-polystat-panel":    "a core panel (Angular plugin)",
	"natel-discrete-panel":      "state-timeline (Angular plugin)",
	"michaeldmoore-annunciator": "stat (Angular plugin)",
}

// PanelTypes lists the panel types a dashboard may use (row included).
func PanelTypes() []string {
	out := []string{"row"}
	for k := range panelSchemas() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var registerOnce sync.Once

// register puts the panel and query schemas into the SDK's runtime (global
// to the process), wrapped so that left-out options take the SDK's
// defaults and so that a custom field config on a panel without one is
// refused.
func register() {
	registerOnce.Do(func() {
		rt := cog.NewRuntime()
		for typ, s := range panelSchemas() {
			cfg := s.config
			cfg.StrictOptionsUnmarshaler = withDefaults(s.options, s.config.StrictOptionsUnmarshaler)
			if s.custom != nil {
				cfg.StrictFieldConfigUnmarshaler = withDefaults(s.custom, s.config.StrictFieldConfigUnmarshaler)
			} else {
				cfg.StrictFieldConfigUnmarshaler = noCustomFieldConfig(typ)
			}
			rt.RegisterPanelcfgVariant(cfg)
		}
		rt.RegisterDataqueryVariant(prometheus.VariantConfig())
		rt.RegisterDataqueryVariant(variants.DataqueryConfig{
			Identifier: JobsightType,
			DataqueryUnmarshaler: func(raw []byte) (variants.Dataquery, error) {
				var t JobsightTarget
				err := json.Unmarshal(raw, &t)
				return t, err
			},
			StrictDataqueryUnmarshaler: func(raw []byte) (variants.Dataquery, error) {
				t, err := DecodeJobsightTarget(raw)
				if err != nil {
					return nil, err
				}
				return t, nil
			},
		})
	})
}

// withDefaults fills the keys a panel leaves out from the SDK's defaults
// (objects merged key by key, anything else replaced) before the strict
// decoding, as Grafana merges a panel's options over its plugin's
// defaults. Keys the defaults leave null are not filled.
func withDefaults(defaults any, strict func([]byte) (any, error)) func([]byte) (any, error) {
	def := toGeneric(defaults)
	return func(raw []byte) (any, error) {
		var given map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&given); err != nil || given == nil {
			return strict(raw)
		}
		merged, _ := json.Marshal(mergeOver(deepCopy(def), given))
		return strict(merged)
	}
}

func noCustomFieldConfig(typ string) func([]byte) (any, error) {
	return func(raw []byte) (any, error) {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		if len(m) > 0 {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return nil, fmt.Errorf("panel type %s has no custom field config in the schema, but sets %v", typ, keys)
		}
		return m, nil
	}
}

// toGeneric turns a Go value into its JSON form as maps and slices, nulls
// dropped.
func toGeneric(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		panic(err)
	}
	dropNulls(m)
	return m
}

func dropNulls(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(x)
		}
	}
}

func deepCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = deepCopy(sub)
		}
		out[k] = v
	}
	return out
}

// mergeOver puts given over def: objects key by key, other values
// replaced.
func mergeOver(def, given map[string]any) map[string]any {
	for k, v := range given {
		if gm, ok := v.(map[string]any); ok {
			if dm, ok := def[k].(map[string]any); ok {
				def[k] = mergeOver(dm, gm)
				continue
			}
		}
		def[k] = v
	}
	return def
}

// DSRef is a datasource reference.
type DSRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// JobsightTarget is a Jobsight panel target as a dashboard stores it: the
// plugin's query model (models.Query) and Grafana's own target keys. As a
// dataquery variant of the SDK it stands for the Jobsight datasource's
// schema.
type JobsightTarget struct {
	models.Query
	RefID      string          `json:"refId"`
	Datasource json.RawMessage `json:"datasource,omitempty"`
	Hide       *bool           `json:"hide,omitempty"`
	Key        string          `json:"key,omitempty"`
}

// JobsightAlertModel is a Jobsight query as an alert rule's model: a
// target plus the keys Grafana's alert engine adds.
type JobsightAlertModel struct {
	JobsightTarget
	IntervalMs    *float64 `json:"intervalMs,omitempty"`
	MaxDataPoints *int64   `json:"maxDataPoints,omitempty"`
}

// DecodeJobsightTarget decodes a dashboard's Jobsight target strictly: no
// key but the model's and Grafana's, values of the right JSON types, and
// accepted by the backend's models.ParseQuery.
func DecodeJobsightTarget(raw []byte) (JobsightTarget, error) {
	var t JobsightTarget
	if err := decodeJobsight(raw, &t, &t.Datasource); err != nil {
		return JobsightTarget{}, err
	}
	return t, nil
}

// DecodeJobsightAlertModel is DecodeJobsightTarget for an alert rule's
// model.
func DecodeJobsightAlertModel(raw []byte) (JobsightAlertModel, error) {
	var m JobsightAlertModel
	if err := decodeJobsight(raw, &m, &m.Datasource); err != nil {
		return JobsightAlertModel{}, err
	}
	return m, nil
}

func decodeJobsight(raw []byte, out any, ds *json.RawMessage) error {
	if err := decodeExact(raw, out); err != nil {
		return fmt.Errorf("Jobsight query: %w (a Jobsight query has the keys %s)", err, keysOf(jsonKeys(reflect.TypeOf(out))))
	}
	if len(*ds) > 0 && string(*ds) != "null" {
		var ref DSRef
		if err := decodeExact(*ds, &ref); err != nil {
			return fmt.Errorf("datasource: %w", err)
		}
	}
	if _, err := models.ParseQuery(raw); err != nil {
		return err
	}
	return nil
}

// ImplementsDataqueryVariant marks JobsightTarget as an SDK dataquery.
func (JobsightTarget) ImplementsDataqueryVariant() {}

// DataqueryType is the datasource plugin type.
func (JobsightTarget) DataqueryType() string { return JobsightType }

// Equals compares two targets.
func (t JobsightTarget) Equals(other variants.Dataquery) bool {
	o, ok := other.(JobsightTarget)
	return ok && reflect.DeepEqual(t, o)
}

// Validate is the SDK's structural validation, which needs no template
// variables: the query type must be one the backend knows. The full
// models.Query.Validate runs in CheckDashboard, on the target with the
// dashboard's variables expanded.
func (t JobsightTarget) Validate() error {
	for _, k := range models.KnownQueryTypes() {
		if t.QueryType == k {
			return nil
		}
	}
	return errors.New("queryType " + quote(string(t.QueryType)) + " is not a Jobsight query type")
}

// cogConfig is the registered (wrapped) schema of a panel type.
func cogConfig(typ string) (variants.PanelcfgConfig, bool) {
	register()
	return cog.ConfigForPanelcfgVariant(typ)
}
