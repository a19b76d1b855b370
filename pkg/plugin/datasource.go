// Package plugin is the Jobsight Grafana datasource backend: one Datasource
// per configured datasource instance, holding HTTP clients for Elasticsearch
// (job documents) and Prometheus (job series), answering health checks and
// panel queries.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend/resource/httpadapter"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

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
	logger log.Logger

	promOnce sync.Once
	promV1   promv1.API
	promErr  error

	allocCache allocationCache
	resources  backend.CallResourceHandler
	// now is the clock (tests fix it).
	now func() time.Time
}

// NewDatasource creates a Datasource from the instance settings Grafana
// passes. Invalid settings do not fail creation: they are kept and reported
// by CheckHealth and by every query, naming the setting at fault. An error
// is returned only when the HTTP clients cannot be built.
func NewDatasource(_ context.Context, inst backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	logger := log.DefaultLogger.With("component", "datasource", "datasource_uid", inst.UID)
	ds := &Datasource{logger: logger, now: time.Now}
	ds.resources = httpadapter.New(ds.routes())
	settings, err := models.LoadSettings(inst)
	if err != nil {
		ds.settingsErr = err
		logger.Warn("Invalid datasource settings", "error", err)
		return ds, nil
	}
	ds.settings = settings

	timeouts := httpclient.DefaultTimeoutOptions
	timeouts.Timeout = settings.Timeout()

	var tlsOpts *httpclient.TLSOptions
	if settings.TLSCACert != "" {
		tlsOpts = &httpclient.TLSOptions{CACertificate: settings.TLSCACert}
	}
	esOpts := httpclient.Options{Timeouts: &timeouts, TLS: tlsOpts, Labels: map[string]string{"backend": "elasticsearch"}}
	if settings.ElasticsearchUser != "" {
		esOpts.BasicAuth = &httpclient.BasicAuthOptions{User: settings.ElasticsearchUser, Password: settings.Secrets.ElasticsearchPassword}
	}
	if ds.es, err = httpclient.New(esOpts); err != nil {
		return nil, fmt.Errorf("creating the Elasticsearch HTTP client: %w", err)
	}

	// A Prometheus answer is bounded in bytes before it is decoded (a
	// per-node timeline of a very large job could otherwise be hundreds
	// of MB); the series cap (maxSeries) is checked after decoding.
	promOpts := httpclient.Options{Timeouts: &timeouts, TLS: tlsOpts, Labels: map[string]string{"backend": "prometheus"},
		Middlewares: withResponseLimit(maxPromBody)}
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
	plainOpts := httpclient.Options{Timeouts: &timeouts, TLS: tlsOpts, Labels: map[string]string{"backend": "allocations"}}
	if ds.plain, err = httpclient.New(plainOpts); err != nil {
		ds.es.CloseIdleConnections()
		ds.prom.CloseIdleConnections()
		return nil, fmt.Errorf("creating the allocations HTTP client: %w", err)
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
	if d.plain != nil {
		d.plain.CloseIdleConnections()
	}
}

// QueryData answers each query on its own: one query's failure does not
// fail the others. Every query is answered for the request's Viewer.
func (d *Datasource) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	resp := backend.NewQueryDataResponse()
	var v Viewer
	var verr error
	if d.settingsErr == nil {
		v, verr = viewerFor(d.settings, req.PluginContext.User, req.Headers)
	}
	for _, q := range req.Queries {
		if verr != nil {
			resp.Responses[q.RefID] = backend.ErrDataResponse(backend.StatusForbidden, verr.Error())
			continue
		}
		resp.Responses[q.RefID] = d.query(ctx, v, req.PluginContext, q)
	}
	return resp, nil
}

// queryCtx is what one query's handler works with.
type queryCtx struct {
	ctx      context.Context
	st       *stats
	v        Viewer
	q        *models.Query
	from, to time.Time
	now      time.Time
	// maxPoints bounds the points of a series (the panel's width).
	maxPoints int
	refID     string
	pc        backend.PluginContext
}

func (d *Datasource) query(ctx context.Context, v Viewer, pc backend.PluginContext, dq backend.DataQuery) backend.DataResponse {
	if d.settingsErr != nil {
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream,
			"the Jobsight datasource settings are invalid: "+oneLine(d.settingsErr))
	}
	model, err := models.ParseQuery(dq.JSON)
	if err != nil {
		return backend.ErrDataResponse(backend.StatusBadRequest, fmt.Sprintf("query %s: %v", dq.RefID, err))
	}
	if model.QueryType == "" {
		model.QueryType = models.QueryType(dq.QueryType)
	}
	if err := model.Validate(); err != nil {
		return backend.ErrDataResponse(backend.StatusBadRequest, fmt.Sprintf("query %s: %s", dq.RefID, oneLine(err)))
	}
	qc := &queryCtx{ctx: ctx, st: &stats{}, v: v, q: &model, from: dq.TimeRange.From, to: dq.TimeRange.To,
		now: d.now(), maxPoints: int(dq.MaxDataPoints), refID: dq.RefID, pc: pc}
	if qc.to.IsZero() || qc.to.After(qc.now) {
		qc.to = qc.now
	}
	if qc.from.IsZero() || !qc.from.Before(qc.to) {
		qc.from = qc.to.Add(-24 * time.Hour)
	}
	log.DefaultLogger.FromContext(ctx).Debug("Query", "refId", dq.RefID, "queryType", model.QueryType, "viewer", v.Login)

	var frames data.Frames
	switch model.QueryType {
	case models.QueryTypeJobs:
		frames, err = d.queryJobs(qc)
	case models.QueryTypeJobTimeline:
		frames, err = d.queryTimeline(qc)
	case models.QueryTypeReservation:
		frames, err = d.queryReservation(qc)
	case models.QueryTypeAllocation:
		frames, err = d.queryAllocation(qc)
	case models.QueryTypeHogging:
		frames, err = d.queryHogging(qc)
	case models.QueryTypeUsageHistory:
		frames, err = d.queryUsageHistory(qc)
	case models.QueryTypeVariable:
		frames, err = d.queryVariable(qc)
	}
	if err != nil {
		var be *backendError
		if errors.As(err, &be) {
			return backend.ErrDataResponseWithSource(backend.StatusBadGateway, backend.ErrorSourceDownstream, fmt.Sprintf("query %s: %s", dq.RefID, be.msg))
		}
		if errors.Is(err, errNotFound) {
			return backend.ErrDataResponse(backend.StatusNotFound, fmt.Sprintf("query %s: %v", dq.RefID, err))
		}
		return backend.ErrDataResponse(backend.StatusBadRequest, fmt.Sprintf("query %s: %v", dq.RefID, err))
	}
	for _, f := range frames {
		f.RefID = dq.RefID
		if f.Meta == nil {
			f.Meta = &data.FrameMeta{}
		}
		if f.Meta.Custom == nil {
			f.Meta.Custom = map[string]any{}
		}
		if m, ok := f.Meta.Custom.(map[string]any); ok {
			m["elasticsearchRequests"] = qc.st.es.Load()
			m["prometheusRequests"] = qc.st.prom.Load()
		}
		if n := qc.st.skipped.Load(); n > 0 {
			f.AppendNotices(data.Notice{Severity: data.NoticeSeverityWarning,
				Text: fmt.Sprintf("%d job documents could not be read and were left out", n)})
		}
	}
	return backend.DataResponse{Frames: frames}
}

// errNotFound: the job asked for does not exist or is not visible to the
// viewer (the two are not told apart, so ids cannot be probed).
var errNotFound = errors.New("job not found")

// oneLine joins a multi-line (errors.Join) message into one line.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// withResponseLimit is the SDK's default middlewares with the response
// limit set to limit bytes (GF_DATAPROXY_RESPONSE_LIMIT still wins).
func withResponseLimit(limit int64) []httpclient.Middleware {
	var out []httpclient.Middleware
	for _, m := range httpclient.DefaultMiddlewares() {
		if n, ok := m.(httpclient.MiddlewareName); ok && n.MiddlewareName() == httpclient.ResponseLimitMiddlewareName {
			continue
		}
		out = append(out, m)
	}
	return append(out, httpclient.ResponseLimitMiddleware(limit))
}
