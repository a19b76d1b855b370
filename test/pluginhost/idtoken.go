package pluginhost

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// IDTokens stands in for the part of Grafana that signs ID tokens
// (feature idForwarding): an ES256 key pair whose public half it serves as
// a JWKS at /api/signing-keys/keys, as Grafana publishes its keys, and
// tokens with the claims Grafana 11–13 puts in them. Its URL is the
// Grafana root URL (GF_APP_URL, the tokens' issuer) the host sends the
// plugin. It is a test double, not Grafana: Grafana's server is never
// built or run here.
type IDTokens struct {
	srv *httptest.Server
	mu  sync.Mutex
	key *ecdsa.PrivateKey
	kid string
	n   int
	// Fetches counts the requests for the key set.
	Fetches atomic.Int64
}

// NewIDTokens starts the key server with a fresh key. Close stops it.
func NewIDTokens() (*IDTokens, error) {
	t := &IDTokens{}
	if err := t.Rotate(); err != nil {
		return nil, err
	}
	t.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/signing-keys/keys" {
			http.NotFound(w, r)
			return
		}
		t.Fetches.Add(1)
		t.mu.Lock()
		pub := t.key.PublicKey
		kid := t.kid
		t.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{PublicJWK(&pub, kid)}})
	}))
	return t, nil
}

// URL is the Grafana root URL, with the trailing slash Grafana's
// root_url has.
func (t *IDTokens) URL() string { return t.srv.URL + "/" }

// Close stops the key server.
func (t *IDTokens) Close() { t.srv.Close() }

// Rotate replaces the signing key (and its id), as Grafana does when it
// rotates its keys; the key set then serves only the new key.
func (t *IDTokens) Rotate() error {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	t.key, t.kid = k, fmt.Sprintf("id-%d-%d", time.Now().UnixNano(), t.n)
	return nil
}

// Identity is what a token says of a signed-in user.
type Identity struct {
	// ID is the user's numeric database id: the subject is "user:<ID>"
	// (when 0, a number derived from UID, never 0).
	ID int64
	// UID is the user's uid, the token's identifier (not in the subject).
	UID string
	// Login and Email are the account's login and email.
	Login, Email string
	// AuthenticatedBy is how the user signed in: "" or "password" for a
	// built-in account, "ldap", "oauth_generic_oauth", "auth.saml", ...
	AuthenticatedBy string
	// OrgID is the organisation (1 when 0).
	OrgID int64
}

// Claims are the claims Grafana 11 and 12 put in a user's ID token
// (grafana/grafana pkg/services/auth/idimpl/service.go: the subject is the
// identity's typed numeric id, identifier its uid).
func (t *IDTokens) Claims(id Identity) jwt.MapClaims {
	num := id.ID
	if num == 0 {
		h := fnv.New32a()
		_, _ = h.Write([]byte(id.UID))
		num = int64(h.Sum32()%1000000) + 1
	}
	org := id.OrgID
	if org == 0 {
		org = 1
	}
	ns := "default"
	if org != 1 {
		ns = fmt.Sprintf("org-%d", org)
	}
	now := time.Now()
	return jwt.MapClaims{
		"iss": t.URL(), "aud": []string{fmt.Sprintf("org:%d", org)}, "sub": fmt.Sprintf("user:%d", num),
		"exp": now.Add(10 * time.Minute).Unix(), "iat": now.Unix(),
		"namespace": ns, "identifier": id.UID, "type": "user",
		"authenticatedBy": id.AuthenticatedBy, "username": id.Login, "email": id.Email, "email_verified": false, "name": id.Login,
	}
}

// Token signs the token Grafana forwards for id.
func (t *IDTokens) Token(id Identity) string {
	return t.Sign(t.Claims(id))
}

// Sign signs claims with the current key, as Grafana signs (ES256, kid and
// typ in the header).
func (t *IDTokens) Sign(claims jwt.MapClaims) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return SignES256(t.key, t.kid, claims)
}

// SignES256 signs claims with key under key id kid.
func SignES256(key *ecdsa.PrivateKey, kid string, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	tok.Header["kid"] = kid
	tok.Header["typ"] = "jwt"
	s, err := tok.SignedString(key)
	if err != nil {
		panic(err) // only with a key that is not ECDSA P-256
	}
	return s
}

// UnsignedToken is claims with alg "none" and no signature.
func UnsignedToken(kid string, claims jwt.MapClaims) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return strings.Join([]string{enc(map[string]string{"alg": "none", "typ": "jwt", "kid": kid}), enc(claims), ""}, ".")
}

// PublicJWK is key as one entry of a JWKS.
func PublicJWK(key *ecdsa.PublicKey, kid string) map[string]string {
	b := func(n []byte) string { return base64.RawURLEncoding.EncodeToString(n) }
	raw, err := key.Bytes() // 0x04 || X || Y
	if err != nil || len(raw) != 65 {
		panic("not a P-256 public key")
	}
	x, y := raw[1:33], raw[33:]
	return map[string]string{"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid, "x": b(x), "y": b(y)}
}
