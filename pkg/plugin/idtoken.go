package plugin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Grafana's ID tokens (feature idForwarding, Grafana 10.3 and later; on by
// default in current releases) are JWTs Grafana signs with ES256 and
// forwards to plugins in the X-Grafana-Id header of every request made for
// a signed-in identity. Their keys are public at
// <root_url>/api/signing-keys/keys (a JWKS). The claims read here:
//
//	iss              Grafana's root_url
//	aud              ["org:<org id>"]
//	sub              "user:<numeric database id>" for a user, e.g. "user:42"
//	                 ("service-account:<id>", ...): the identity's typed id
//	identifier       the user's uid (e.g. "ae3fk2n1lz9xcb"), not in sub
//	type             "user"
//	exp, iat         10 minutes of validity
//	namespace        "default" for org 1, "org-<id>" otherwise (newer releases)
//	authenticatedBy  how the identity signed in: "password" or "" (built-in
//	                 login), "ldap", "auth.saml", "oauth_<provider>",
//	                 "authproxy", "jwt", "render", "apikey", ...
//
// (Read in grafana/grafana, Apache-2.0: pkg/services/auth/idimpl/service.go
// sets Subject to the identity's typed id and Identifier to its raw
// identifier; pkg/services/authn/identity.go makes the first "<type>:<id>"
// from the numeric id and the second the uid.)
//	username, email  the login and email (newer releases)
//
// A token is accepted only if everything checks; any doubt is a refusal.

// signingKeysPath is where Grafana publishes its ID-token keys.
const signingKeysPath = "api/signing-keys/keys"

// idTokenLeeway is the clock skew allowed between Grafana and the plugin.
const idTokenLeeway = 30 * time.Second

// Key-set cache: keys are refetched after keysTTL, and at once for a key id
// not yet known (Grafana rotated its key) unless the last fetch is younger
// than keysMinRefetch (a stream of forged key ids must not become a stream
// of requests to Grafana).
const (
	keysTTL        = 10 * time.Minute
	keysMinRefetch = 15 * time.Second
	maxJWKSBytes   = 1 << 20
)

// idClaims are the claims of a Grafana ID token that Jobsight reads.
type idClaims struct {
	jwt.RegisteredClaims
	Namespace       string `json:"namespace,omitempty"`
	AuthenticatedBy string `json:"authenticatedBy,omitempty"`
	Identifier      string `json:"identifier,omitempty"`
	Type            string `json:"type,omitempty"`
	Username        string `json:"username,omitempty"`
	Login           string `json:"login,omitempty"`
	Email           string `json:"email,omitempty"`
}

// login is the token's login claim (username in current releases).
func (c *idClaims) login() string {
	if c.Username != "" {
		return c.Username
	}
	return c.Login
}

// userID is the id of a user's token ("" for any other identity): the
// part of sub after "user:", Grafana's numeric database id.
func (c *idClaims) userID() string {
	id, ok := strings.CutPrefix(c.Subject, "user:")
	if !ok || id == "" || (c.Type != "" && c.Type != "user") {
		return ""
	}
	return id
}

// keySet is one Grafana's signing keys, as last fetched.
type keySet struct {
	mu      sync.Mutex
	keys    map[string]*ecdsa.PublicKey
	fetched time.Time
	err     error
}

// idVerifier verifies ID tokens against the keys of the Grafana at a URL.
// One per datasource instance; safe for concurrent use.
type idVerifier struct {
	client *http.Client
	now    func() time.Time
	mu     sync.Mutex
	sets   map[string]*keySet // by JWKS URL
}

func newIDVerifier(client *http.Client, now func() time.Time) *idVerifier {
	return &idVerifier{client: client, now: now, sets: map[string]*keySet{}}
}

// verify checks token (signature, algorithm, expiry, issuer, audience,
// namespace) for the Grafana at grafanaURL (its root_url, issuer) whose
// keys are served under keysBase, for org orgID, and returns its claims.
func (iv *idVerifier) verify(ctx context.Context, token, issuer, keysBase string, orgID int64) (*idClaims, error) {
	if issuer == "" {
		return nil, errors.New("Grafana did not send its root URL (GF_APP_URL), so its ID token cannot be checked")
	}
	if keysBase == "" {
		keysBase = issuer
	}
	keysURL, err := url.JoinPath(keysBase, signingKeysPath)
	if err != nil {
		return nil, fmt.Errorf("the Grafana URL %q is not a URL: %w", keysBase, err)
	}
	if orgID == 0 {
		orgID = 1
	}
	var claims idClaims
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(idTokenLeeway),
		jwt.WithAudience("org:"+strconv.FormatInt(orgID, 10)),
		jwt.WithTimeFunc(iv.now),
	)
	_, err = parser.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, errors.New("the token names no key (kid)")
		}
		return iv.key(ctx, keysURL, kid)
	})
	if err != nil {
		return nil, fmt.Errorf("Grafana's ID token (X-Grafana-Id) is not valid: %w", err)
	}
	if strings.TrimRight(claims.Issuer, "/") != strings.TrimRight(issuer, "/") {
		return nil, fmt.Errorf("Grafana's ID token was issued by %q, not by this Grafana (%s)", claims.Issuer, issuer)
	}
	if ns := claims.Namespace; ns != "" && ns != "*" {
		want := "org-" + strconv.FormatInt(orgID, 10)
		if orgID == 1 {
			want = "default"
		}
		if ns != want {
			return nil, fmt.Errorf("Grafana's ID token is for namespace %q, not this organisation's (%s)", ns, want)
		}
	} else if ns == "*" {
		return nil, errors.New("Grafana's ID token is for every namespace (*): not a user's token")
	}
	return &claims, nil
}

// key returns the public key kid of the JWKS at keysURL, fetching the set
// when it is stale or does not hold kid.
func (iv *idVerifier) key(ctx context.Context, keysURL, kid string) (*ecdsa.PublicKey, error) {
	iv.mu.Lock()
	ks := iv.sets[keysURL]
	if ks == nil {
		ks = &keySet{}
		iv.sets[keysURL] = ks
	}
	iv.mu.Unlock()

	ks.mu.Lock()
	defer ks.mu.Unlock()
	now := iv.now()
	age := now.Sub(ks.fetched)
	stale := ks.fetched.IsZero() || age > keysTTL || age < 0
	if k, ok := ks.keys[kid]; ok && !stale {
		return k, nil
	}
	if !stale && age < keysMinRefetch {
		if ks.err != nil {
			return nil, ks.err
		}
		return nil, fmt.Errorf("Grafana publishes no key %q", kid)
	}
	keys, err := iv.fetch(ctx, keysURL)
	ks.fetched = now
	ks.err = err
	if err != nil {
		// Refuse on doubt: old keys are not used once stale or unfetchable.
		ks.keys = nil
		return nil, err
	}
	ks.keys = keys
	if k, ok := keys[kid]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("Grafana publishes no key %q", kid)
}

// jwk is one key of a JWKS, as Grafana serves its EC keys.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Crv string `json:"crv"`
	Alg string `json:"alg"`
	Use string `json:"use"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// fetch reads the JWKS at keysURL: its P-256 signing keys by id.
func (iv *idVerifier) fetch(ctx context.Context, keysURL string) (map[string]*ecdsa.PublicKey, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, keysURL, nil)
	if err != nil {
		return nil, fmt.Errorf("fetching Grafana's signing keys: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	res, err := iv.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching Grafana's signing keys from %s: %w (set grafanaUrl to an address of Grafana the plugin can reach)", keysURL, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching Grafana's signing keys from %s: HTTP %d", keysURL, res.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading Grafana's signing keys from %s: %w", keysURL, err)
	}
	if len(body) > maxJWKSBytes {
		return nil, fmt.Errorf("Grafana's signing keys at %s exceed %d bytes", keysURL, maxJWKSBytes)
	}
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("Grafana's signing keys at %s are not a JWKS: %w", keysURL, err)
	}
	keys := map[string]*ecdsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "EC" || k.Crv != "P-256" || k.Kid == "" || (k.Alg != "" && k.Alg != "ES256") || (k.Use != "" && k.Use != "sig") {
			continue
		}
		x, errX := base64.RawURLEncoding.DecodeString(k.X)
		y, errY := base64.RawURLEncoding.DecodeString(k.Y)
		if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
			continue
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			continue // not a point of the curve
		}
		keys[k.Kid] = pub
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("Grafana's signing keys at %s hold no ES256 key", keysURL)
	}
	return keys, nil
}
