package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
)

// SystemRoots returns the system's trusted CAs (a fresh pool each call, as
// x509.SystemCertPool gives). It is a variable so that a test can stand a
// CA of its own in for the public ones a real system trusts.
var SystemRoots = x509.SystemCertPool

// ErrNoPEMCertificate is the error of a CA bundle that holds no PEM
// certificate Go can parse.
var ErrNoPEMCertificate = errors.New("holds no PEM certificate (-----BEGIN CERTIFICATE-----) that parses")

// TrustPEM returns the CAs a client trusts: the system's, plus the
// certificates of pem (none when pem is empty). A private CA is trusted in
// addition to the public ones, never instead of them, so one endpoint with
// a private CA does not make every public one fail.
func TrustPEM(pem []byte) (*x509.CertPool, error) {
	pool, err := SystemRoots()
	if err != nil || pool == nil {
		// No system store (a bare container): only the CAs named.
		pool = x509.NewCertPool()
	}
	if len(pem) > 0 && !pool.AppendCertsFromPEM(pem) {
		return nil, ErrNoPEMCertificate
	}
	return pool, nil
}

// CheckPEM says whether pem holds at least one certificate that parses:
// ErrNoPEMCertificate when not.
func CheckPEM(pem []byte) error {
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return ErrNoPEMCertificate
	}
	return nil
}

// TrustFile is TrustPEM of the bundle in path; an error names option
// (e.g. prometheus.ca_file) and the file. An empty path is the system's
// CAs alone.
func TrustFile(option, path string) (*x509.CertPool, error) {
	if path == "" {
		return TrustPEM(nil)
	}
	pem, err := readCAFile(option, path)
	if err != nil {
		return nil, err
	}
	pool, err := TrustPEM(pem)
	if err != nil {
		return nil, problem(option, "%s %v", path, err)
	}
	return pool, nil
}

// CheckCAFile reads the bundle in path and checks that it holds a
// certificate; an error names option and the file.
func CheckCAFile(option, path string) error {
	pem, err := readCAFile(option, path)
	if err != nil {
		return err
	}
	if err := CheckPEM(pem); err != nil {
		return problem(option, "%s %v", path, err)
	}
	return nil
}

// readCAFile reads a CA bundle of at most 4 MiB.
func readCAFile(option, path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, problem(option, "%v", err)
	}
	if fi.Size() > 4<<20 {
		return nil, problem(option, "%s is %d bytes; a CA bundle is at most 4 MiB", path, fi.Size())
	}
	pem, err := os.ReadFile(path) // #nosec G304 -- the path is the operator's own configuration
	if err != nil {
		return nil, problem(option, "%v", err)
	}
	return pem, nil
}

// TrustTransport returns a clone of http.DefaultTransport whose TLS
// client trusts the system's CAs plus those in the bundle at path (the
// option's value; the system's alone when empty).
func TrustTransport(option, path string) (*http.Transport, error) {
	pool, err := TrustFile(option, path)
	if err != nil {
		return nil, err
	}
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("%s: http.DefaultTransport is a %T, not an *http.Transport", option, http.DefaultTransport)
	}
	t := base.Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}
