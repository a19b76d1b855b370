package config

import (
	"fmt"
	"net/http"
	"strings"
)

// DefaultTenantHeader is the header that names the tenant of a request to
// a multi-tenant series store when none is configured: Mimir's, Cortex's
// and Loki's X-Scope-OrgID (Thanos Receive reads THANOS-TENANT unless
// started with --receive.tenant-header=X-Scope-OrgID).
const DefaultTenantHeader = "X-Scope-OrgID"

// MaxTenantLength bounds a tenant id (Mimir allows 150 characters).
const MaxTenantLength = 150

// reservedHeaders are set by the clients themselves; a tenant header may
// not replace them.
var reservedHeaders = []string{
	"Authorization", "Content-Type", "Content-Encoding", "Content-Length", "Accept", "Accept-Encoding",
	"Host", "User-Agent", "Connection", "Transfer-Encoding", "X-Prometheus-Remote-Write-Version",
}

// TenantHeaderProblem says what is wrong with name as the tenant header
// ("" when nothing is): it must be an HTTP token (RFC 9110: letters,
// digits and !#$%&'*+-.^_`|~) and not a header the clients set themselves.
func TenantHeaderProblem(name string) string {
	if name == "" {
		return "must not be empty (leave it out for " + DefaultTenantHeader + ")"
	}
	for i := 0; i < len(name); i++ {
		if !tokenChar(name[i]) {
			return fmt.Sprintf("%q is not an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~ only)", name)
		}
	}
	for _, r := range reservedHeaders {
		if strings.EqualFold(name, r) {
			return fmt.Sprintf("%q is a header the request sets itself; name the store's tenant header, e.g. %s", name, DefaultTenantHeader)
		}
	}
	return ""
}

// TenantProblem says what is wrong with tenant as a tenant id ("" when
// nothing is): printable ASCII without spaces (no CR or LF, which could
// end the header), at most MaxTenantLength characters. Empty means no
// tenant and is fine.
func TenantProblem(tenant string) string {
	if len(tenant) > MaxTenantLength {
		return fmt.Sprintf("is %d characters long, at most %d are allowed", len(tenant), MaxTenantLength)
	}
	for i := 0; i < len(tenant); i++ {
		if c := tenant[i]; c <= ' ' || c >= 0x7f {
			return fmt.Sprintf("%q: only printable ASCII without spaces is allowed (character %d is %q)", tenant, i+1, rune(c))
		}
	}
	return ""
}

// tokenChar reports whether c may appear in an HTTP token (RFC 9110 5.6.2).
func tokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// TenantHeaders returns the header that carries tenant (header, or
// DefaultTenantHeader when header is empty), or nil when tenant is empty.
func TenantHeaders(header, tenant string) http.Header {
	if tenant == "" {
		return nil
	}
	if header == "" {
		header = DefaultTenantHeader
	}
	h := http.Header{}
	h.Set(header, tenant)
	return h
}
