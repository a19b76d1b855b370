package plugin

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/pkg/models"
)

// queryHandler answers one validated query of its type.
type queryHandler func(*Datasource, *queryCtx) (data.Frames, error)

// queryHandlers are the handlers of the query types, one file each
// (jobs.go, timeline.go, ...).
var queryHandlers = map[models.QueryType]queryHandler{
	models.QueryTypeJobs:           (*Datasource).queryJobs,
	models.QueryTypeJobTimeline:    (*Datasource).queryTimeline,
	models.QueryTypeReservation:    (*Datasource).queryReservation,
	models.QueryTypeTypicalRequest: (*Datasource).queryTypicalRequest,
	models.QueryTypeAllocation:     (*Datasource).queryAllocation,
	models.QueryTypeHogging:        (*Datasource).queryHogging,
	models.QueryTypeUsageHistory:   (*Datasource).queryUsageHistory,
	models.QueryTypeVariable:       (*Datasource).queryVariable,
	// clusterseries.go
	models.QueryTypeClusterSeries: (*Datasource).queryClusterSeries,
}

// newQueryMux routes queries by backend.DataQuery.QueryType, which Grafana
// copies from the model's queryType, to their type's handler. A query
// whose DataQuery.QueryType is empty or unknown (a hand-built request, a
// client that sets only the model's queryType) goes to the fallback,
// which answers it by the model's queryType, or says why it has none it
// knows.
func (d *Datasource) newQueryMux() *datasource.QueryTypeMux {
	mux := datasource.NewQueryTypeMux()
	for t, h := range queryHandlers {
		mux.HandleFunc(string(t), d.serve(t, h))
	}
	mux.HandleFunc("", d.serve("", nil))
	return mux
}

// serve answers each query of a request routed to type t with h, for
// the Viewer in the context (QueryData puts it there; without one, every
// query is refused).
func (d *Datasource) serve(t models.QueryType, h queryHandler) backend.QueryDataHandlerFunc {
	return func(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
		v, ok := viewerFrom(ctx)
		if !ok {
			return answerAll(req, backend.ErrDataResponse(backend.StatusForbidden, errNoUser.Error())), nil
		}
		resp := backend.NewQueryDataResponse()
		for _, q := range req.Queries {
			resp.Responses[q.RefID] = d.answer(ctx, v, req.PluginContext, q, t, h)
		}
		return resp, nil
	}
}

// stats counts the backend requests one query made (the per-panel budget
// is tested and reported in the frame's metadata).
type stats struct {
	es, prom, other atomic.Int64
	// skipped counts job documents that did not decode.
	skipped atomic.Int64
	// note is a warning for the panel from deep in a handler (paging).
	note atomic.Pointer[string]
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
	// lacking counts the finished jobs of a level aggregation's scope
	// that lack each figure (answer says how many were left out).
	lacking *sums
	// counted are the documents of the unfinished jobs this query read
	// (unfinishedJobs), whose figures it adds itself: the finished jobs'
	// aggregations leave them out, so that a job whose final document
	// is written between the two reads counts once.
	counted []string
}

// answer decodes and validates one query's model and answers it with h,
// the handler of the type it was routed to (t). The model's queryType
// wins: Grafana fills DataQuery.QueryType from it, so the two differ only
// on the fallback route (t "") or in a hand-built request, and there the
// handler of the model's type answers. Errors become the query's own
// error response, with the status a user can act on.
func (d *Datasource) answer(ctx context.Context, v Viewer, pc backend.PluginContext, dq backend.DataQuery, t models.QueryType, h queryHandler) backend.DataResponse {
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
	if model.QueryType != t {
		h = queryHandlers[model.QueryType] // Validate accepts known types only
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

	frames, err := h(d, qc)
	if err != nil {
		var be *backendError
		if errors.As(err, &be) {
			return backend.ErrDataResponseWithSource(backend.StatusBadGateway, backend.ErrorSourceDownstream, fmt.Sprintf("query %s: %s", dq.RefID, be.msg))
		}
		if errors.Is(err, errNotFound) {
			return backend.ErrDataResponse(backend.StatusNotFound, fmt.Sprintf("query %s: %v", dq.RefID, err))
		}
		if errors.Is(err, errFullAccessOnly) {
			return backend.ErrDataResponse(backend.StatusForbidden, fmt.Sprintf("query %s: %v", dq.RefID, err))
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
		if qc.lacking != nil && f == frames[0] {
			f.AppendNotices(missingNotice(qc.lacking, jobmodel.FigCoreUsed, jobmodel.FigGPUUsed, jobmodel.FigMemoryUsed,
				jobmodel.FigCoreReserved, jobmodel.FigGPUReserved, jobmodel.FigMemoryReserved)...)
		}
		if n := qc.st.note.Load(); n != nil {
			f.AppendNotices(data.Notice{Severity: data.NoticeSeverityWarning, Text: *n})
		}
		if n := qc.st.skipped.Load(); n > 0 {
			f.AppendNotices(data.Notice{Severity: data.NoticeSeverityWarning,
				Text: fmt.Sprintf("%d job documents could not be read and were left out", n)})
		}
	}
	return backend.DataResponse{Frames: frames}
}

// viewerKey is the context key of a request's Viewer.
type viewerKey struct{}

// withViewer returns ctx carrying the request's Viewer to the handlers.
func withViewer(ctx context.Context, v Viewer) context.Context {
	return context.WithValue(ctx, viewerKey{}, v)
}

// viewerFrom returns the Viewer withViewer put in ctx, if any.
func viewerFrom(ctx context.Context) (Viewer, bool) {
	v, ok := ctx.Value(viewerKey{}).(Viewer)
	return v, ok
}
