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
	"sync"
	"sync/atomic"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend/resource/httpadapter"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/pkg/models"
)

// PluginID is the datasource plugin id, as in plugin.json.
const PluginID = models.PluginID

// The handlers the SDK's instance manager dispatches to.
var (
	_ backend.QueryDataHandler      = (*Datasource)(nil)
	_ backend.CheckHealthHandler    = (*Datasource)(nil)
	_ backend.CallResourceHandler   = (*Datasource)(nil)
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
	plain  *http.Client // allocationsUrl: TLS settings only, no store credentials
	keys   *http.Client // Grafana's signing keys: the system's CAs plus grafanaTlsCaCert
	logger log.Logger

	promOnce sync.Once
	promV1   promv1.API
	promErr  error

	allocCache allocationCache
	// ids verifies Grafana's ID tokens (identitySource idToken).
	ids       *idVerifier
	queries   backend.QueryDataHandler // the query-type mux, see newQueryMux
	resources backend.CallResourceHandler
	// now is the clock (tests fix it).
	now func() time.Time
	// noPIT: the Elasticsearch server offers no point in time (paging.go).
	noPIT atomic.Bool
}

// NewDatasource creates a Datasource from the instance settings Grafana
// passes. Invalid settings do not fail creation: they are kept and reported
// by CheckHealth and by every query, naming the setting at fault. An error
// is returned only when the HTTP clients cannot be built.
func NewDatasource(_ context.Context, inst backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	logger := log.DefaultLogger.With("component", "datasource", "datasource_uid", inst.UID)
	ds := &Datasource{logger: logger, now: time.Now}
	ds.resources = httpadapter.New(ds.routes())
	ds.queries = ds.newQueryMux()
	settings, err := models.LoadSettings(inst)
	if err != nil {
		ds.settingsErr = err
		logger.Warn("Invalid datasource settings", "error", err)
		return ds, nil
	}
	ds.settings = settings

	timeouts := httpclient.DefaultTimeoutOptions
	timeouts.Timeout = settings.Timeout()

	// Each backend trusts the system's CAs plus its own (trust.go).
	trust := map[string]httpclient.ConfigureTLSConfigFunc{}
	for _, b := range []string{models.TrustElasticsearch, models.TrustPrometheus, models.TrustAllocations, models.TrustGrafana} {
		if trust[b], err = trustTLS(settings, b); err != nil {
			return nil, err
		}
	}
	esOpts := httpclient.Options{Timeouts: &timeouts, ConfigureTLSConfig: trust[models.TrustElasticsearch], Labels: map[string]string{"backend": "elasticsearch"},
		Middlewares: withTrustHint(models.TrustElasticsearch, nil)}
	if settings.ElasticsearchUser != "" {
		esOpts.BasicAuth = &httpclient.BasicAuthOptions{User: settings.ElasticsearchUser, Password: settings.Secrets.ElasticsearchPassword}
	}
	if ds.es, err = httpclient.New(esOpts); err != nil {
		return nil, fmt.Errorf("creating the Elasticsearch HTTP client: %w", err)
	}

	// A Prometheus answer is bounded in bytes before it is decoded (a
	// per-node timeline of a very large job could otherwise be hundreds
	// of MB); the series cap (maxSeries) is checked after decoding.
	promOpts := httpclient.Options{Timeouts: &timeouts, ConfigureTLSConfig: trust[models.TrustPrometheus], Labels: map[string]string{"backend": "prometheus"},
		Middlewares: withTrustHint(models.TrustPrometheus, withResponseLimit(maxPromBody))}
	// The tenant header goes on every Prometheus request, the health
	// check's included.
	promOpts.Header = config.TenantHeaders(settings.PrometheusTenantHeader, settings.PrometheusTenant)
	switch {
	case settings.Secrets.PrometheusBearerToken != "":
		if promOpts.Header == nil {
			promOpts.Header = http.Header{}
		}
		promOpts.Header.Set("Authorization", "Bearer "+settings.Secrets.PrometheusBearerToken)
	case settings.PrometheusUser != "":
		promOpts.BasicAuth = &httpclient.BasicAuthOptions{User: settings.PrometheusUser, Password: settings.Secrets.PrometheusPassword}
	}
	if ds.prom, err = httpclient.New(promOpts); err != nil {
		ds.es.CloseIdleConnections()
		return nil, fmt.Errorf("creating the Prometheus HTTP client: %w", err)
	}
	plainOpts := httpclient.Options{Timeouts: &timeouts, ConfigureTLSConfig: trust[models.TrustAllocations], Labels: map[string]string{"backend": "allocations"},
		Middlewares: withTrustHint(models.TrustAllocations, nil)}
	if ds.plain, err = httpclient.New(plainOpts); err != nil {
		ds.es.CloseIdleConnections()
		ds.prom.CloseIdleConnections()
		return nil, fmt.Errorf("creating the allocations HTTP client: %w", err)
	}
	// Grafana's signing keys are fetched with a client of their own: no
	// credentials, and the system's CAs plus grafanaTlsCaCert only (never
	// a store's CA).
	keysOpts := httpclient.Options{Timeouts: &timeouts, ConfigureTLSConfig: trust[models.TrustGrafana], Labels: map[string]string{"backend": "grafana"},
		Middlewares: withTrustHint(models.TrustGrafana, nil)}
	if ds.keys, err = httpclient.New(keysOpts); err != nil {
		ds.Dispose()
		return nil, fmt.Errorf("creating the HTTP client for Grafana's signing keys: %w", err)
	}
	ds.ids = newIDVerifier(ds.keys, time.Now)
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
	if d.plain != nil {
		d.plain.CloseIdleConnections()
	}
	if d.keys != nil {
		d.keys.CloseIdleConnections()
	}
}

// QueryData answers each query on its own: one query's failure does not
// fail the others. Invalid settings fail every query, naming the setting at
// fault; otherwise the request's Viewer is resolved once (a request it
// cannot be resolved for is refused, every query of it) and the queries go
// through the query-type mux (newQueryMux) with the Viewer in their context.
func (d *Datasource) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	if d.settingsErr != nil {
		return answerAll(req, backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream,
			"the Jobsight datasource settings are invalid: "+oneLine(d.settingsErr))), nil
	}
	// ngalert sets FromAlert as a plain request header; the ID token
	// is a forwarded HTTP header.
	r := requestOf(req.PluginContext, req.Headers[backend.FromAlertHeaderName], req.GetHTTPHeader)
	v, err := viewerFor(ctx, d.settings, d.ids, r)
	if err != nil {
		return answerAll(req, backend.ErrDataResponse(backend.StatusForbidden, err.Error())), nil
	}
	return d.queries.QueryData(withViewer(ctx, v), req)
}

// answerAll answers every query of req with r.
func answerAll(req *backend.QueryDataRequest, r backend.DataResponse) *backend.QueryDataResponse {
	resp := backend.NewQueryDataResponse()
	for _, q := range req.Queries {
		resp.Responses[q.RefID] = r
	}
	return resp
}

// oneLine joins a multi-line (errors.Join) message into one line.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
