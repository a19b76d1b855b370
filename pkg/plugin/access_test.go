package plugin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/pkg/models"
)

func settingsFor(t *testing.T, jsonData string) *models.Settings {
	t.Helper()
	s, err := models.ParseJSONData([]byte(jsonData))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil && !strings.Contains(err.Error(), "Url") {
		t.Fatal(err)
	}
	return s
}

// keyServer is a test double of Grafana's signing-key endpoint
// (/api/signing-keys/keys, a JWKS of ES256 keys): its URL is the Grafana
// root URL the tokens name as issuer.
type keyServer struct {
	*httptest.Server
	mu      sync.Mutex
	key     *ecdsa.PrivateKey
	kid     string
	fetches atomic.Int64
}

func newKeyServer(t *testing.T) *keyServer {
	t.Helper()
	ks := &keyServer{}
	ks.rotate(t)
	ks.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/signing-keys/keys" {
			http.NotFound(w, r)
			return
		}
		ks.fetches.Add(1)
		ks.mu.Lock()
		defer ks.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{jwkOf(&ks.key.PublicKey, ks.kid)}})
	}))
	t.Cleanup(ks.Close)
	return ks
}

func (ks *keyServer) rotate(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.key, ks.kid = k, "kid-"+base64.RawURLEncoding.EncodeToString(k.D.Bytes()[:6])
}

func (ks *keyServer) root() string { return ks.URL + "/" }

func jwkOf(pub *ecdsa.PublicKey, kid string) map[string]string {
	raw, _ := pub.Bytes()
	enc := base64.RawURLEncoding.EncodeToString
	return map[string]string{"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid, "x": enc(raw[1:33]), "y": enc(raw[33:])}
}

// uidOf is the uid test user id has: a Grafana-like short uid that does
// not contain the numeric id, so that a test cannot pass by confusing
// the two.
func uidOf(id int64) string { return fmt.Sprintf("e%013x", id*2654435761) }

// claims are what Grafana 11 and 12 put in the ID token of user id (its
// numeric database id), as grafana/grafana's idimpl service signs it: iss
// root_url, aud ["org:1"], sub "user:<numeric id>", identifier the uid,
// type "user", namespace "default" (org 1), username, email,
// email_verified, name, authenticatedBy, 10 minutes' validity.
func (ks *keyServer) claims(id int64, login, email, authBy string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{"iss": ks.root(), "aud": []string{"org:1"}, "sub": fmt.Sprintf("user:%d", id), "exp": now.Add(10 * time.Minute).Unix(),
		"iat": now.Unix(), "namespace": "default", "identifier": uidOf(id), "type": "user", "authenticatedBy": authBy,
		"username": login, "email": email, "email_verified": false, "name": login}
}

func sign(key *ecdsa.PrivateKey, kid string, c jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = kid
	tok.Header["typ"] = "jwt"
	s, err := tok.SignedString(key)
	if err != nil {
		panic(err)
	}
	return s
}

func (ks *keyServer) token(c jwt.MapClaims) string {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return sign(ks.key, ks.kid, c)
}

func userReq(ks *keyServer, u *backend.User, token string, fromAlert bool) request {
	return request{user: u, orgID: 1, appURL: ks.root(), idToken: token, fromAlert: fromAlert}
}

// With identitySource unverifiedLogin (the old behaviour, opt-in) the
// mappings work on the login and email Grafana passes.
func TestViewerForUnverifiedLogin(t *testing.T) {
	s := settingsFor(t, `{"identitySource":"unverifiedLogin","userMapping":"emailLocalPart","userMap":{"ops":"root"},"accountPIs":{"physics":["alice"],"chem":["alice","bob"]},"fullAccessRoles":["Admin"]}`)
	cases := []struct {
		name string
		user *backend.User
		want Viewer
		err  string
	}{
		{"admin sees all", &backend.User{Login: "boss", Role: "Admin"}, Viewer{Full: true, Login: "boss"}, ""},
		{"editor is restricted here", &backend.User{Login: "ed", Email: "ed@x.org", Role: "Editor"}, Viewer{Login: "ed", User: "ed"}, ""},
		{"viewer by email", &backend.User{Login: "a1", Email: "alice@uni.edu", Role: "Viewer"},
			Viewer{Login: "a1", User: "alice", Accounts: []string{"chem", "physics"}}, ""},
		{"user map wins", &backend.User{Login: "ops", Email: "ops@x", Role: "Viewer"}, Viewer{Login: "ops", User: "root"}, ""},
		{"no email, no mapping", &backend.User{Login: "x", Role: "Viewer"}, Viewer{}, "has no Slurm user"},
		{"no user", nil, Viewer{}, "no Grafana user"},
		{"anonymous", &backend.User{Role: "Viewer"}, Viewer{}, "has no login"},
	}
	for _, c := range cases {
		got, err := viewerFor(context.Background(), s, nil, request{user: c.user})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got.Full != c.want.Full || got.User != c.want.User || got.Alert || strings.Join(got.Accounts, ",") != strings.Join(c.want.Accounts, ",") {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// The default identity source trusts a login only when Grafana's signed
// ID token says an identity provider vouches for the account; a built-in
// account (whose owner can rename it, PUT /api/user) is mapped only by
// its user id (userIdMap), which it cannot change.
func TestViewerForIDToken(t *testing.T) {
	ks := newKeyServer(t)
	s := settingsFor(t, fmt.Sprintf(`{"userMap":{"ops":"root"},"userIdMap":{"user:42":"carol",%q:"dan"},"fullAccessRoles":["Admin"],"accountPIs":{"chem":["alice"]}}`, uidOf(43)))
	if s.IdentitySource != models.IdentityIDToken {
		t.Fatalf("default identitySource %q", s.IdentitySource)
	}
	ids := newIDVerifier(http.DefaultClient, time.Now)
	viewer := func(login string) *backend.User {
		return &backend.User{Login: login, Email: login + "@uni.edu", Role: "Viewer"}
	}
	cases := []struct {
		name, login, token string
		want, err          string
	}{
		{"LDAP account by login", "alice", ks.token(ks.claims(1, "alice", "alice@uni.edu", "ldap")), "alice", ""},
		{"OAuth account by login", "bob", ks.token(ks.claims(2, "bob", "bob@uni.edu", "oauth_generic_oauth")), "bob", ""},
		{"SAML account in userMap", "ops", ks.token(ks.claims(3, "ops", "", "auth.saml")), "root", ""},
		{"built-in account renamed root", "root", ks.token(ks.claims(9, "root", "root@uni.edu", "")), "", "signed in with Grafana's own login"},
		{"built-in password sign-in renamed ops", "ops", ks.token(ks.claims(9, "ops", "", "password")), "", `signed in with password`},
		{"built-in account in userIdMap by user:<numeric id>", "anything", ks.token(ks.claims(42, "anything", "", "password")), "carol", ""},
		{"built-in account in userIdMap by uid", "whatever", ks.token(ks.claims(43, "whatever", "", "")), "dan", ""},
		// A uid is matched against identifier only: a token whose sub
		// carried it (not Grafana's shape) is not that user's.
		{"uid in sub is not the identifier", "whatever", ks.token(func() jwt.MapClaims {
			c := ks.claims(43, "whatever", "", "password")
			c["sub"], c["identifier"] = "user:"+uidOf(43), ""
			return c
		}()), "", "signed in with password"},
		// Auth proxy accounts can edit their own login and email
		// (Grafana's PUT /api/user refuses only external-login modules):
		// not trusted by default.
		{"auth proxy account renamed root", "root", ks.token(ks.claims(11, "root", "root@uni.edu", "authproxy")), "", "signed in with authproxy"},
		{"auth proxy account in userIdMap", "anything", ks.token(ks.claims(42, "anything", "", "authproxy")), "carol", ""},
		// The image renderer vouches for the user id, not the name.
		{"render of a user in userIdMap", "anything", ks.token(ks.claims(42, "anything", "", "render")), "carol", ""},
		{"render of an LDAP user by name", "alice", ks.token(ks.claims(1, "alice", "alice@uni.edu", "render")), "", "image renderer"},
		{"no token", "alice", "", "", "sent no ID token"},
		{"token of another login", "alice", ks.token(ks.claims(2, "bob", "", "ldap")), "", `is for "bob"`},
		{"service account token", "sa", ks.token(func() jwt.MapClaims {
			// Grafana signs a service account's token with its typed
			// id, uid and type only (no username, email or
			// authenticatedBy: those are for users).
			c := ks.claims(7, "sa", "", "")
			c["sub"], c["type"] = "service-account:7", "service-account"
			for _, k := range []string{"username", "email", "email_verified", "name", "authenticatedBy"} {
				delete(c, k)
			}
			return c
		}()), "", "not a user"},
	}
	for _, c := range cases {
		got, err := viewerFor(context.Background(), s, ids, userReq(ks, viewer(c.login), c.token, false))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: viewer %+v, err %v; want an error with %q", c.name, got, err, c.err)
			}
			continue
		}
		if err != nil || got.Full || got.User != c.want {
			t.Errorf("%s: viewer %+v, err %v; want Slurm user %q", c.name, got, err, c.want)
		}
	}
	// The refusal names why and what to do.
	_, err := viewerFor(context.Background(), s, ids, userReq(ks, viewer("root"), ks.token(ks.claims(9, "root", "", "")), false))
	if err == nil || !strings.Contains(err.Error(), "userIdMap") || !strings.Contains(err.Error(), "can change") {
		t.Errorf("refusal of a built-in account: %v", err)
	}
	// Full access by role needs no token: the role is Grafana's to give.
	if v, err := viewerFor(context.Background(), s, ids, userReq(ks, &backend.User{Login: "boss", Role: "Admin"}, "", false)); err != nil || !v.Full {
		t.Errorf("admin without a token: %+v %v", v, err)
	}
}

// trustedAuthMethods is the site's list of the sign-in methods it has
// enabled. A method the site disables keeps vouching in Grafana's tokens
// (a cookie session reports the module of the user's stored external
// login record) while Grafana lets that user edit their login and email,
// so the site's procedure (docs/datasource.md) is to take the method out
// of trustedAuthMethods in the same change: its sessions are then
// refused by name and mapped only by userIdMap. Auth proxy is trusted
// only where a site lists it (its proxy refuses PUT /api/user).
func TestTrustedAuthMethodsAreTheSites(t *testing.T) {
	ks := newKeyServer(t)
	ids := newIDVerifier(http.DefaultClient, time.Now)
	viewer := func(login string) *backend.User {
		return &backend.User{Login: login, Email: login + "@uni.edu", Role: "Viewer"}
	}
	check := func(s *models.Settings, login, authBy, want, wantErr string) {
		t.Helper()
		v, err := viewerFor(context.Background(), s, ids, userReq(ks, viewer(login), ks.token(ks.claims(21, login, login+"@uni.edu", authBy)), false))
		if wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Errorf("%s via %q: viewer %+v, err %v; want an error with %q", login, authBy, v, err, wantErr)
			}
			return
		}
		if err != nil || v.User != want {
			t.Errorf("%s via %q: viewer %+v, err %v; want %q", login, authBy, v, err, want)
		}
	}
	// LDAP was disabled: the site now lists only its OAuth provider.
	narrowed := settingsFor(t, `{"fullAccessRoles":["Admin"],"trustedAuthMethods":["oauth_generic_oauth"]}`)
	check(narrowed, "root", "ldap", "", "signed in with ldap")
	check(narrowed, "bob", "oauth_generic_oauth", "bob", "")
	check(narrowed, "bob", "oauth_github", "", "signed in with oauth_github")
	pinned := settingsFor(t, `{"fullAccessRoles":["Admin"],"trustedAuthMethods":["oauth_generic_oauth"],"userIdMap":{"user:21":"carol"}}`)
	check(pinned, "root", "ldap", "carol", "")
	// Auth proxy: refused by name unless the site lists it.
	check(settingsFor(t, `{"fullAccessRoles":["Admin"]}`), "alice", "authproxy", "", "signed in with authproxy")
	check(settingsFor(t, `{"fullAccessRoles":["Admin"],"trustedAuthMethods":["authproxy","oauth_*"]}`), "alice", "authproxy", "alice", "")
}

// Forged tokens are refused, each for its reason.
func TestForgedIDTokensAreRefused(t *testing.T) {
	ks := newKeyServer(t)
	s := settingsFor(t, `{"fullAccessRoles":["Admin"]}`)
	ids := newIDVerifier(http.DefaultClient, time.Now)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	good := func() jwt.MapClaims { return ks.claims(1, "alice", "alice@uni.edu", "ldap") }
	with := func(k string, v any) jwt.MapClaims { c := good(); c[k] = v; return c }
	without := func(k string) jwt.MapClaims { c := good(); delete(c, k); return c }
	ks.mu.Lock()
	kid := ks.kid
	ks.mu.Unlock()
	unsigned := func(c jwt.MapClaims) string {
		enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
		return enc(map[string]string{"alg": "none", "typ": "jwt", "kid": kid}) + "." + enc(c) + "."
	}
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, good())
	hs.Header["kid"] = kid
	pubRaw, _ := ks.key.PublicKey.Bytes()
	hsToken, _ := hs.SignedString(pubRaw) // the public key as an HMAC secret
	cases := map[string]string{
		"wrong key":       sign(other, kid, good()),
		"unknown key id":  sign(other, "not-published", good()),
		"alg none":        unsigned(good()),
		"HS256":           hsToken,
		"expired":         ks.token(with("exp", time.Now().Add(-time.Hour).Unix())),
		"no expiry":       ks.token(without("exp")),
		"issued later":    ks.token(with("iat", time.Now().Add(time.Hour).Unix())),
		"other org":       ks.token(with("aud", []string{"org:2"})),
		"no audience":     ks.token(without("aud")),
		"other namespace": ks.token(with("namespace", "org-2")),
		"every namespace": ks.token(with("namespace", "*")),
		"other issuer":    ks.token(with("iss", "http://elsewhere:3000/")),
		"not a JWT":       "garbage",
		"tampered claims": func() string {
			p := strings.Split(ks.token(good()), ".")
			b, _ := json.Marshal(with("username", "root"))
			return p[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + p[2]
		}(),
	}
	u := &backend.User{Login: "alice", Email: "alice@uni.edu", Role: "Viewer"}
	if v, err := viewerFor(context.Background(), s, ids, userReq(ks, u, ks.token(good()), false)); err != nil || v.User != "alice" {
		t.Fatalf("the genuine token: %+v %v", v, err)
	}
	for name, tok := range cases {
		v, err := viewerFor(context.Background(), s, ids, userReq(ks, u, tok, false))
		if err == nil {
			t.Errorf("%s: accepted as %+v", name, v)
		} else if strings.Contains(err.Error(), "alice") && !strings.Contains(err.Error(), "token") {
			t.Errorf("%s: the error does not name the token: %v", name, err)
		}
	}
}

// Grafana rotates its key: a token under a key id not yet fetched makes
// the plugin fetch the key set again (once per keysMinRefetch); keys are
// refetched when stale, and an unreachable key server is a refusal, not
// the old keys.
func TestIDTokenKeyRotation(t *testing.T) {
	ks := newKeyServer(t)
	s := settingsFor(t, `{}`)
	now := time.Now()
	clock := func() time.Time { return now }
	ids := newIDVerifier(http.DefaultClient, clock)
	u := &backend.User{Login: "alice", Role: "Viewer"}
	try := func() error {
		c := ks.claims(1, "alice", "", "ldap")
		c["iat"], c["exp"] = now.Unix(), now.Add(10*time.Minute).Unix()
		_, err := viewerFor(context.Background(), s, ids, userReq(ks, u, ks.token(c), false))
		return err
	}
	if err := try(); err != nil || ks.fetches.Load() != 1 {
		t.Fatalf("first token: %v, %d fetches", err, ks.fetches.Load())
	}
	if err := try(); err != nil || ks.fetches.Load() != 1 {
		t.Fatalf("second token: %v, %d fetches (the keys are cached)", err, ks.fetches.Load())
	}
	ks.rotate(t)
	// Within keysMinRefetch of the last fetch, an unknown key id does not
	// make another request.
	if err := try(); err == nil || ks.fetches.Load() != 1 {
		t.Fatalf("new key right after a fetch: %v, %d fetches", err, ks.fetches.Load())
	}
	now = now.Add(keysMinRefetch + time.Second)
	if err := try(); err != nil || ks.fetches.Load() != 2 {
		t.Fatalf("after rotation: %v, %d fetches", err, ks.fetches.Load())
	}
	now = now.Add(keysTTL + time.Second)
	ks.Close()
	if err := try(); err == nil || !strings.Contains(err.Error(), "signing keys") {
		t.Fatalf("stale keys, server gone: %v", err)
	}
}

// Grafana's alert scheduler queries as its own service identity (login
// grafana_scheduler, role Admin, no email, no ID token) with FromAlert:
// it sees every job whatever fullAccessRoles says. A user cannot imitate
// it: Grafana copies a user's FromAlert header, but not their role, and
// signs an ID token for every signed-in user.
func TestAlertEngineSeesEverythingWhateverTheRoles(t *testing.T) {
	ks := newKeyServer(t)
	ids := newIDVerifier(http.DefaultClient, time.Now)
	scheduler := &backend.User{Login: schedulerLogin, Role: "Admin"}
	for _, roles := range []string{`{"fullAccessRoles":[]}`, `{}`, `{"fullAccessRoles":["Viewer"]}`, `{"fullAccessRoles":["Editor"],"identitySource":"unverifiedLogin"}`} {
		s := settingsFor(t, roles)
		for name, r := range map[string]request{
			"scheduler": userReq(ks, scheduler, "", true),
			"no user":   userReq(ks, nil, "", true),
		} {
			v, err := viewerFor(context.Background(), s, ids, r)
			if err != nil || !v.Full || !v.Alert {
				t.Errorf("%s %s: %+v %v; want full access", roles, name, v, err)
			}
		}
		imitations := map[string]request{
			"viewer renamed grafana_scheduler": userReq(ks, &backend.User{Login: schedulerLogin, Role: "Viewer"}, "", true),
			"editor renamed grafana_scheduler": userReq(ks, &backend.User{Login: schedulerLogin, Role: "Editor"}, "", true),
			"viewer renamed, with its token": userReq(ks, &backend.User{Login: schedulerLogin, Role: "Viewer"},
				ks.token(ks.claims(5, schedulerLogin, "", "password")), true),
			"admin renamed, with its token": userReq(ks, &backend.User{Login: schedulerLogin, Role: "Admin"},
				ks.token(ks.claims(6, schedulerLogin, "", "password")), true),
			"viewer with FromAlert": userReq(ks, &backend.User{Login: "mallory", Email: "m@x", Role: "Viewer"},
				ks.token(ks.claims(7, "mallory", "m@x", "ldap")), true),
		}
		for name, r := range imitations {
			v, err := viewerFor(context.Background(), s, ids, r)
			if v.Alert {
				t.Errorf("%s %s: taken for the alert engine", roles, name)
			}
			// With no full-access role, nothing of theirs is full.
			if roles == `{"fullAccessRoles":[]}` && err == nil && v.Full {
				t.Errorf("%s %s: full access %+v", roles, name, v)
			}
		}
	}
}

func TestTrustedMethod(t *testing.T) {
	m := models.DefaultTrustedAuthMethods
	for in, want := range map[string]bool{"ldap": true, "auth.saml": true, "oauth_github": true, "oauth_generic_oauth": true, "authproxy": false,
		"jwt": true, "": false, "password": false, "apikey": false, "oauth": false, "render": false, "extendedjwt": false, "LDAP": false} {
		if got := trustedMethod(m, in); got != want {
			t.Errorf("trustedMethod(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestCanSee(t *testing.T) {
	v := Viewer{User: "alice", Accounts: []string{"physics"}}
	if !v.canSee("bob", "physics") || v.canSee("bob", "chem") || !v.canSee("alice", "chem") {
		t.Error("canSee")
	}
	if !(Viewer{Full: true}).canSee("bob", "chem") {
		t.Error("full viewers see every job")
	}
}
