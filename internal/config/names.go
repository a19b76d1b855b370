package config

import (
	"regexp"
	"strings"
)

var (
	clusterName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	indexName   = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,199}$`)
)

// ValidIndexName reports whether name is a usable Elasticsearch index name
// (lowercase letters, digits, '.', '_' or '-'; no wildcard).
func ValidIndexName(name string) bool { return indexName.MatchString(name) }

// ValidClusterName reports whether name is a usable cluster name.
func ValidClusterName(name string) bool { return clusterName.MatchString(name) }

// HTTPURL reports whether u is an http:// or https:// URL, as every URL
// option must be.
func HTTPURL(u string) bool {
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}
