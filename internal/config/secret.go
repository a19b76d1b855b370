package config

import (
	"fmt"
	"os"
	"strings"
)

// ReadSecret reads a credential from a file, trimming one trailing newline;
// an empty path is no credential. The error names the option and the file,
// never the content. Every password and token a product sends to a store
// is read here.
func ReadSecret(option, path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", option, err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}
