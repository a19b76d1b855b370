// Package plugin is the Jobsight Grafana datasource backend: one Datasource
// per configured datasource instance, holding HTTP clients for Elasticsearch
// (job documents) and Prometheus (job series), answering health checks and
// panel queries.
package plugin

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/jobsight/jobsight/pkg/models"
)

// PluginID is the datasource plugin id, as in plugin.json.
const PluginID = "jobsight-slurm-datasource"

// The handlers the SDK's instance manager dispatches to.
var (
	_ backend.QueryDataHandler      = (*Datasource)(nil)
	_ backend.CheckHealthHandler    = (*Datasource)(nil)
	_ instancemgmt.InstanceDisposer = (*Datasource)(nil)
)

// Datasource is one configured Jobsight datasource instance. It is created by
// NewDatasource when Grafana first uses the instance (or its settings change)
// and disposed of by Dispose.
type Datasource struct {
	// settings is nil when settingsErr is set: the instance still exists so
	// that health checks and queries can say what is wrong with the settings.
	settings    *models.Settings
	settingsErr error

	es     *http.Client // Elasticsearch, with basic auth when configured
	prom   *http.Client // Prometheus, with bearer token or basic auth
	logger log.Logger
}

// NewDatasource creates a Datasource from the instance settings Grafana
// passes. Invalid settings do not fail creation: they are kept and reported
// by CheckHealth and by every query, naming the setting at fault. An error
// is returned only when the HTTP clients cannot be built.
func NewDatasource(_ context.Context, inst backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	logger := log.DefaultLogger.With("component", "datasource", "datasource_uid", inst.UID)
	ds := &Datasource{logger: logger}
	settings, err := models.LoadSettings(inst)
	if err != nil {
		ds.settingsErr = err
		logger.Warn("Invalid datasource settings", "error", err)
		return ds, nil
	}
	ds.settings = settings

	timeouts := httpclient.DefaultTimeoutOptions
	timeouts.Timeout = settings.Timeout()

	esOpts := httpclient.Options{Timeouts: &timeouts, Labels: map[string]string{"backend": "elasticsearch"}}
	if settings.ElasticsearchUser != "" {
		esOpts.BasicAuth = &httpclient.BasicAuthOptions{User: settings.ElasticsearchUser, Password: settings.Secrets.ElasticsearchPassword}
	}
	if ds.es, err = httpclient.New(esOpts); err != nil {
		return nil, fmt.Errorf("creating the Elasticsearch HTTP client: %w", err)
	}

	promOpts := httpclient.Options{Timeouts: &timeouts, Labels: map[string]string{"backend": "prometheus"}}
	switch {
	case settings.Secrets.PrometheusBearerToken != "":
		promOpts.Header = http.Header{"Authorization": []string{"Bearer " + settings.Secrets.PrometheusBearerToken}}
	case settings.PrometheusUser != "":
		promOpts.BasicAuth = &httpclient.BasicAuthOptions{User: settings.PrometheusUser, Password: settings.Secrets.PrometheusPassword}
	}
	if ds.prom, err = httpclient.New(promOpts); err != nil {
		ds.es.CloseIdleConnections()
		return nil, fmt.Errorf("creating the Prometheus HTTP client: %w", err)
	}
	return ds, nil
}

// Dispose releases the instance's HTTP connections. Grafana calls it when
// the datasource settings change or the datasource is deleted.
func (d *Datasource) Dispose() {
	if d.es != nil {
		d.es.CloseIdleConnections()
	}
	if d.prom != nil {
		d.prom.CloseIdleConnections()
	}
}

// QueryData answers each query on its own: one query's failure does not
// fail the others. No query type is implemented yet; each answers with an
// error saying so.
func (d *Datasource) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	resp := backend.NewQueryDataResponse()
	for _, q := range req.Queries {
		resp.Responses[q.RefID] = d.query(ctx, q)
	}
	return resp, nil
}

func (d *Datasource) query(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	if d.settingsErr != nil {
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream,
			"the Jobsight datasource settings are invalid: "+oneLine(d.settingsErr))
	}
	model, err := models.ParseQuery(q.JSON)
	if err != nil {
		return backend.ErrDataResponse(backend.StatusBadRequest, fmt.Sprintf("query %s: %v", q.RefID, err))
	}
	qt := model.QueryType
	if qt == "" {
		qt = models.QueryType(q.QueryType)
	}
	log.DefaultLogger.FromContext(ctx).Debug("Query", "refId", q.RefID, "queryType", qt)
	if qt == "" {
		return backend.ErrDataResponse(backend.StatusBadRequest,
			fmt.Sprintf("query %s: no query type selected (one of %s)", q.RefID, knownTypes()))
	}
	return backend.ErrDataResponse(backend.StatusNotImplemented,
		fmt.Sprintf("query %s: query type %q is not implemented yet", q.RefID, qt))
}

func knownTypes() string {
	var names []string
	for _, t := range models.KnownQueryTypes() {
		names = append(names, string(t))
	}
	return strings.Join(names, ", ")
}

// oneLine joins a multi-line (errors.Join) message into one line.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
