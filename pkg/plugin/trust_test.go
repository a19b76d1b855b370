package plugin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/internal/testca"
)

// Real TLS handshakes against servers whose certificates test CAs signed:
// a private CA per store, and a CA standing in for a public one in the
// system's pool (testca.System).

// jwksServer is a Grafana serving one ES256 signing key, over https with
// a certificate ca signed; it returns the keys URL.
func jwksServer(t *testing.T, ca *testca.CA) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b := key.PublicKey.X.FillBytes(make([]byte, 32))
	c := key.PublicKey.Y.FillBytes(make([]byte, 32))
	body, _ := json.Marshal(map[string]any{"keys": []map[string]string{{"kty": "EC", "kid": "k1", "crv": "P-256", "alg": "ES256", "use": "sig",
		"x": base64.RawURLEncoding.EncodeToString(b), "y": base64.RawURLEncoding.EncodeToString(c)}}})
	return ca.Server(t, testca.OK(string(body))).URL + "/" + signingKeysPath
}

func trustDatasource(t *testing.T, js map[string]any) *Datasource {
	t.Helper()
	js["elasticsearchUrl"], js["prometheusUrl"] = "https://es.invalid:9200", "https://prom.invalid:9090"
	jd, _ := json.Marshal(js)
	inst, err := NewDatasource(context.Background(), backend.DataSourceInstanceSettings{UID: "tls", JSONData: jd})
	if err != nil {
		t.Fatal(err)
	}
	d := inst.(*Datasource)
	t.Cleanup(d.Dispose)
	if d.settingsErr != nil {
		t.Fatal(d.settingsErr)
	}
	return d
}

// get is one GET with c; nil when the handshake and the request succeed.
func get(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func wantTrusted(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v; want trusted", what, err)
	}
}

// wantRefused: err is the refusal of an untrusted certificate, with the
// settings that would trust its CA named.
func wantRefused(t *testing.T, what string, err error, setting string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") ||
		!strings.Contains(err.Error(), "no CA the plugin trusts for") || !strings.Contains(err.Error(), "add its CA's PEM to "+setting) {
		t.Errorf("%s: %v; want refused: certificate signed by unknown authority, naming %s", what, err, setting)
	}
}

// TestPrivateStoreCAKeepsGrafanasPublicCertificate is the site:
// a private CA for the stores (tlsCaCert) and a public certificate on
// Grafana's root_url. Grafana's signing keys are still fetched (the
// store CA used to replace the system's CAs, which refused every Viewer),
// the stores are trusted, and a store's CA never vouches for Grafana.
func TestPrivateStoreCAKeepsGrafanasPublicCertificate(t *testing.T) {
	public, site := testca.New(t, "public CA"), testca.New(t, "site CA")
	testca.System(t, public)
	d := trustDatasource(t, map[string]any{"tlsCaCert": string(site.PEM)})
	ctx := context.Background()

	if _, err := d.ids.fetch(ctx, jwksServer(t, public)); err != nil {
		t.Errorf("Grafana's signing keys behind a public certificate, with a private store CA set: %v; want fetched", err)
	}
	store := site.Server(t, testca.OK(`{}`))
	wantTrusted(t, "Elasticsearch with the site CA", get(d.es, store.URL))
	wantTrusted(t, "Prometheus with the site CA", get(d.prom, store.URL))
	wantTrusted(t, "allocationsUrl with the site CA", get(d.plain, store.URL))
	// Added to the system's CAs, not instead of them.
	wantTrusted(t, "Elasticsearch with a public certificate", get(d.es, public.Server(t, testca.OK(`{}`)).URL))

	_, err := d.ids.fetch(ctx, jwksServer(t, site))
	wantRefused(t, "Grafana's signing keys behind a certificate of the store CA", err, "grafanaTlsCaCert")
}

// TestTrustIsPerBackend: each backend trusts its own CA (plus the
// system's), not another backend's; grafanaTlsCaCert is trusted for
// Grafana's signing keys only.
func TestTrustIsPerBackend(t *testing.T) {
	public := testca.New(t, "public CA")
	testca.System(t, public)
	esCA, promCA, allocCA, grafanaCA := testca.New(t, "es CA"), testca.New(t, "prom CA"), testca.New(t, "collector CA"), testca.New(t, "grafana CA")
	d := trustDatasource(t, map[string]any{"elasticsearchTlsCaCert": string(esCA.PEM), "prometheusTlsCaCert": string(promCA.PEM),
		"allocationsTlsCaCert": string(allocCA.PEM), "grafanaTlsCaCert": string(grafanaCA.PEM)})
	es, prom, alloc := esCA.Server(t, testca.OK(`{}`)), promCA.Server(t, testca.OK(`{}`)), allocCA.Server(t, testca.OK(`{}`))
	pub := public.Server(t, testca.OK(`{}`))
	ctx := context.Background()

	wantTrusted(t, "Elasticsearch with its CA", get(d.es, es.URL))
	wantTrusted(t, "Prometheus with its CA", get(d.prom, prom.URL))
	wantTrusted(t, "the collector's allocationsUrl with its CA", get(d.plain, alloc.URL))
	_, err := d.ids.fetch(ctx, jwksServer(t, grafanaCA))
	wantTrusted(t, "Grafana's signing keys with grafanaTlsCaCert", err)
	for name, c := range map[string]*http.Client{"Elasticsearch": d.es, "Prometheus": d.prom, "allocationsUrl": d.plain, "Grafana's keys": d.keys} {
		wantTrusted(t, name+" with a public certificate", get(c, pub.URL))
	}

	wantRefused(t, "Elasticsearch with Prometheus's CA", get(d.es, prom.URL), "elasticsearchTlsCaCert (or tlsCaCert)")
	wantRefused(t, "Prometheus with Elasticsearch's CA", get(d.prom, es.URL), "prometheusTlsCaCert (or tlsCaCert)")
	wantRefused(t, "allocationsUrl with Elasticsearch's CA", get(d.plain, es.URL), "allocationsTlsCaCert (or tlsCaCert)")
	wantRefused(t, "Elasticsearch with Grafana's CA", get(d.es, grafanaCA.Server(t, testca.OK(`{}`)).URL), "elasticsearchTlsCaCert (or tlsCaCert)")
	_, err = d.ids.fetch(ctx, jwksServer(t, esCA))
	wantRefused(t, "Grafana's signing keys with Elasticsearch's CA", err, "grafanaTlsCaCert")
}

// A CA setting that holds no certificate is refused, naming the setting.
func TestCASettingsNameTheProblem(t *testing.T) {
	for _, key := range []string{"tlsCaCert", "elasticsearchTlsCaCert", "prometheusTlsCaCert", "allocationsTlsCaCert", "grafanaTlsCaCert"} {
		jd, _ := json.Marshal(map[string]any{"elasticsearchUrl": "https://es:9200", "prometheusUrl": "https://p:9090",
			key: "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"})
		inst, err := NewDatasource(context.Background(), backend.DataSourceInstanceSettings{JSONData: jd})
		if err != nil {
			t.Fatal(err)
		}
		d := inst.(*Datasource)
		if d.settingsErr == nil || !strings.Contains(d.settingsErr.Error(), "setting "+key+": must be a PEM certificate bundle") {
			t.Errorf("%s holding no certificate: %v; want the setting named", key, d.settingsErr)
		}
	}
}
