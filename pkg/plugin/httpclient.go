package plugin

// The HTTP side shared by the backends (Elasticsearch, Prometheus, the
// allocations endpoint) and the health check: the clients' middlewares,
// bounds on answers, and messages that name the backend and what to check.

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
)

// maxBody bounds how much of a response body a health check or the
// allocations endpoint may send.
const maxBody = 1 << 20

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

// backendError is a failure of Elasticsearch or Prometheus: the query
// answers it as a downstream error with its message.
type backendError struct {
	backend string
	msg     string
}

func (e *backendError) Error() string { return e.msg }

// httpProblem describes a non-2xx answer, or returns "" for a 2xx one.
func httpProblem(product, base, what string, status int, body []byte, credHint string) string {
	switch {
	case status >= 200 && status < 300:
		return ""
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Sprintf("%s at %s refused %s with HTTP %d: check %s", product, base, what, status, credHint)
	default:
		return fmt.Sprintf("%s at %s answered %s with HTTP %d%s", product, base, what, status, bodyHint(body))
	}
}

// bodyHint returns a short excerpt of an error body, for context.
func bodyHint(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if s == "" {
		return ""
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return ": " + s
}

// rootCause strips the *url.Error wrapper ("Get \"http://...\": ...") so a
// message does not repeat the URL it already names.
func rootCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
