package plugin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/resource/httpadapter"

	"github.com/jobsight/jobsight/pkg/models"
)

// The identity check (GET resources/identity): whom the plugin maps the
// asking Grafana user to, and why, or why not — the very refusal a query
// of theirs gets, since the decision is viewerFor's, the function the
// query path calls. An org Admin may ask about another user
// (?login=…[&email=…][&userId=…][&uid=…][&authenticatedBy=…]); without that
// user's own ID token the plugin cannot know their org role or how they
// sign in, so it answers, for a restricted role, what each way of signing
// in would give (identitySource idToken), or the one answer
// (unverifiedLogin). The answer is JSON (HTML-safe escaping), never holds a
// token, and about a named user only what the admin named plus the mapping.

// Identity is the answer of the identity route.
type Identity struct {
	// About is "you" (the asking user) or "named user" (an admin's question).
	About string `json:"about"`
	// Login and Role are the Grafana user's, as Grafana passes them (Role
	// only for "you": the plugin does not know another user's role).
	Login string `json:"login,omitempty"`
	Role  string `json:"role,omitempty"`
	// IdentitySource is the datasource's identitySource setting.
	IdentitySource string `json:"identitySource,omitempty"`
	// FullAccessRoles are the roles that see every job.
	FullAccessRoles []string `json:"fullAccessRoles"`
	// Answer is the decision for "you"; Cases those for a named user.
	*Answer
	Cases []Answer `json:"cases,omitempty"`
	// Notes say what could not be evaluated, and why.
	Notes []string `json:"notes,omitempty"`
}

// Answer is one decision: whom a request is mapped to and why, or the
// refusal.
type Answer struct {
	// AuthenticatedBy is the sign-in method the ID token names (or, for a
	// named user, the method this case assumes).
	AuthenticatedBy string `json:"authenticatedBy,omitempty"`
	// Assumes says, for a named user, what the case assumes.
	Assumes string `json:"assumes,omitempty"`
	// Allowed is false when queries are refused; Refusal then is their
	// message, word for word.
	Allowed bool   `json:"allowed"`
	Refusal string `json:"refusal,omitempty"`
	// Source is what the decision rests on: "role" (an org role in
	// fullAccessRoles), "alertEngine", "idToken" (the verified ID token's
	// claims) or "userHeaders" (the login and email Grafana passes,
	// identitySource unverifiedLogin).
	Source string `json:"source,omitempty"`
	// GrafanaUserID and GrafanaUID are the token's sub and identifier,
	// the keys userIdMap takes.
	GrafanaUserID string `json:"grafanaUserId,omitempty"`
	GrafanaUID    string `json:"grafanaUid,omitempty"`
	// Rule is the mapping rule that matched, in words.
	Rule string `json:"rule,omitempty"`
	// SlurmUser is the Slurm user of a restricted viewer.
	SlurmUser string `json:"slurmUser,omitempty"`
	// Scope is "all" (every job), "own" (the Slurm user's jobs and those
	// of PIAccounts) or "none" (refused).
	Scope      string   `json:"scope"`
	PIAccounts []string `json:"piAccounts,omitempty"`
	// Summary is the answer in one sentence.
	Summary string `json:"summary"`
}

// Limits of a named-user question: Grafana's own limits are below these.
const (
	maxNamedField = 256
	maxCases      = 8
)

func (d *Datasource) handleIdentity(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	pc := httpadapter.PluginConfigFromContext(r.Context())
	req := requestOf(pc, r.Header.Get(backend.FromAlertHeaderName), r.Header.Get)
	q := r.URL.Query()
	named := q.Has("login") || q.Has("userId") || q.Has("uid") || q.Has("email")
	if !named {
		writeIdentity(w, http.StatusOK, d.identityOf(r.Context(), req))
		return
	}
	u := req.user
	if u == nil || u.Role != "Admin" || req.isAlertEngine() {
		writeJSONError(w, http.StatusForbidden, fmt.Errorf("only an org Admin may check another user's identity; ask without parameters for your own"))
		return
	}
	if d.settingsErr != nil {
		writeJSONError(w, http.StatusBadRequest, fmt.Errorf("the Jobsight datasource settings are invalid: %s", oneLine(d.settingsErr)))
		return
	}
	n := namedUser{login: q.Get("login"), email: q.Get("email"), id: q.Get("userId"), uid: q.Get("uid"), method: q.Get("authenticatedBy"), hasMethod: q.Has("authenticatedBy")}
	if err := n.validate(); err != nil {
		writeJSONError(w, http.StatusBadRequest, err)
		return
	}
	writeIdentity(w, http.StatusOK, d.identityOfNamed(r.Context(), req, n))
}

func writeIdentity(w http.ResponseWriter, status int, id Identity) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	// encoding/json escapes <, > and & (HTML-safe).
	_ = json.NewEncoder(w).Encode(id)
}

// identityOf answers for the asking user: the decision is viewerFor's, as
// for a query (QueryData), so a refusal is the query's word for word.
func (d *Datasource) identityOf(ctx context.Context, r request) Identity {
	id := Identity{About: "you"}
	if r.user != nil {
		id.Login, id.Role = r.user.Login, r.user.Role
	}
	if d.settingsErr != nil {
		msg := "the Jobsight datasource settings are invalid: " + oneLine(d.settingsErr)
		id.Answer = &Answer{Scope: "none", Refusal: msg, Summary: "Refused: " + msg}
		return id
	}
	s := d.settings
	id.IdentitySource, id.FullAccessRoles = s.IdentitySource, nonNil(s.FullAccessRoles)
	v, err := viewerFor(ctx, s, d.ids, r)
	if err != nil {
		a := refused(err)
		id.Answer = &a
		return id
	}
	var claims *idClaims
	if !v.Full && s.IdentitySource == models.IdentityIDToken && r.idToken != "" {
		// viewerFor has just verified this token; its claims are read
		// again only to say which of them the mapping used.
		claims = unverifiedClaims(r.idToken)
	}
	a := explain(s, v, r.user, claims)
	id.Answer = &a
	return id
}

// refused is the answer for a refusal.
func refused(err error) Answer {
	return Answer{Scope: "none", Refusal: err.Error(), Summary: "Refused: " + err.Error()}
}

// explain says why v is what viewerFor made of a request by user (claims:
// the ID token's, for a restricted viewer mapped through one). The rule is
// named only when it gives the Slurm user viewerFor chose.
func explain(s *models.Settings, v Viewer, u *backend.User, claims *idClaims) Answer {
	if v.Alert {
		return Answer{Allowed: true, Source: "alertEngine", Scope: "all", Rule: "Grafana's alert engine sees every job",
			Summary: "Grafana's alert engine: every job."}
	}
	if v.Full {
		role := ""
		if u != nil {
			role = u.Role
		}
		return Answer{Allowed: true, Source: "role", Scope: "all", Rule: fmt.Sprintf("org role %s is in fullAccessRoles", role),
			Summary: fmt.Sprintf("Full access: your org role %s sees every job (fullAccessRoles).", role)}
	}
	a := Answer{Allowed: true, SlurmUser: v.User, Scope: "own", PIAccounts: v.Accounts}
	login, email := "", ""
	if u != nil {
		login, email = u.Login, u.Email
	}
	if claims != nil {
		a.Source = "idToken"
		a.AuthenticatedBy = claims.AuthenticatedBy
		a.GrafanaUserID, a.GrafanaUID = claims.Subject, claims.Identifier
		if l := claims.login(); l != "" {
			login = l
		}
		if claims.Email != "" {
			email = claims.Email
		}
		// The entry slurmUser takes, when it gave this Slurm user.
		if key, m, ok := userIDMapEntry(s.UserIDMap, claims); ok && m == v.User {
			a.Rule = fmt.Sprintf("userIdMap entry %q (the Grafana user's id, which its owner cannot change)", key)
		}
		if a.Rule == "" && trustedMethod(s.TrustedAuthMethods, claims.AuthenticatedBy) {
			if r := byNameRule(s, login, email, v.User); r != "" {
				a.Rule = r + fmt.Sprintf(", trusted because Grafana's ID token says the account signed in with %s (trustedAuthMethods)", claims.AuthenticatedBy)
			}
		}
	} else {
		a.Source = "userHeaders"
		if r := byNameRule(s, login, email, v.User); r != "" {
			a.Rule = r + " as Grafana passes it (identitySource unverifiedLogin: not verified)"
		}
	}
	if a.Rule == "" {
		a.Rule = "a rule this check cannot name (see the datasource's identity settings)"
	}
	a.Summary = fmt.Sprintf("You are seen as Slurm user %s: %s. By %s.", v.User, scopeWords(v.Accounts), a.Rule)
	return a
}

// byNameRule names the userMap or userMapping rule that maps login and
// email to user ("" when neither does).
func byNameRule(s *models.Settings, login, email, user string) string {
	if m, ok := s.UserMap[login]; ok {
		if m == user {
			return fmt.Sprintf("userMap entry for login %q", login)
		}
		return ""
	}
	if byName(s, login, email) != user {
		return ""
	}
	mapping := s.UserMapping
	if mapping == "" {
		mapping = models.UserMappingLogin
	}
	switch mapping {
	case models.UserMappingEmail:
		return fmt.Sprintf("userMapping email (%q)", email)
	case models.UserMappingEmailLocalPart:
		return fmt.Sprintf("userMapping emailLocalPart (of %q)", email)
	default:
		return fmt.Sprintf("userMapping login (%q)", login)
	}
}

// scopeWords says what a restricted viewer sees.
func scopeWords(accounts []string) string {
	if len(accounts) == 0 {
		return "your own jobs only"
	}
	return "your own jobs and every job of the accounts you are PI of (" + strings.Join(accounts, ", ") + ")"
}

// unverifiedClaims reads a token's claims without checking them: only for
// a token viewerFor has verified in the same request.
func unverifiedClaims(token string) *idClaims {
	var c idClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &c); err != nil {
		return nil
	}
	return &c
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// namedUser is an admin's question about another Grafana user, as read on
// Administration → Users (login, email, the numeric id of
// /api/users/lookup, the uid in the user page's address).
type namedUser struct {
	login, email, id, uid string
	method                string
	hasMethod             bool
}

func (n namedUser) validate() error {
	if n.login == "" {
		return fmt.Errorf("give the user's Grafana login (login=…), and where known email, userId (the numeric id) and uid")
	}
	for name, v := range map[string]string{"login": n.login, "email": n.email, "userId": n.id, "uid": n.uid, "authenticatedBy": n.method} {
		if len(v) > maxNamedField || strings.ContainsAny(v, "\x00\r\n") {
			return fmt.Errorf("%s is not a Grafana %s", name, name)
		}
	}
	if n.id != "" {
		if i, err := strconv.ParseInt(n.id, 10, 64); err != nil || i <= 0 {
			return fmt.Errorf("userId is Grafana's numeric user id (e.g. 42), not %q", n.id)
		}
	}
	return nil
}

// identityOfNamed answers an admin's question about another user. Their
// ID token is not at hand: for identitySource idToken each case is a token
// shaped as Grafana 11/12 sign one for that user (sub user:<id>,
// identifier the uid, username, email, authenticatedBy), signed with a key
// made for this check alone and verified by a verifier that trusts only
// that key, then decided by viewerFor as a query of theirs would be.
func (d *Datasource) identityOfNamed(ctx context.Context, asker request, n namedUser) Identity {
	s := d.settings
	id := Identity{About: "named user", Login: n.login, IdentitySource: s.IdentitySource, FullAccessRoles: nonNil(s.FullAccessRoles)}
	id.Notes = append(id.Notes, fmt.Sprintf("Evaluated without the user's own ID token: the plugin does not know their org role, so each answer is for a role outside fullAccessRoles (%s), who see every job.",
		strings.Join(s.FullAccessRoles, ", ")))
	u := &backend.User{Login: n.login, Email: n.email, Role: "Viewer"}
	if s.IdentitySource != models.IdentityIDToken {
		v, err := viewerFor(ctx, s, nil, request{user: u, orgID: asker.orgID})
		a := caseAnswer(s, v, err, u, nil)
		id.Cases = []Answer{a}
		if n.email == "" {
			id.Notes = append(id.Notes, "No email given: a mapping by email is evaluated as if the user had none.")
		}
		return id
	}
	methods := []string{n.method}
	if !n.hasMethod {
		methods = []string{"password", ""}
		for _, m := range s.TrustedAuthMethods {
			if p, ok := strings.CutSuffix(m, "*"); ok {
				m = p + "provider"
			}
			methods = append(methods, m)
		}
		id.Notes = append(id.Notes, "How the user signs in is in their ID token only: each case assumes one method (password and \"\" are Grafana's own login; a trusted method with * is shown with \"provider\"). Give authenticatedBy=… for one.")
	}
	if len(methods) > maxCases {
		methods = methods[:maxCases]
	}
	sc := *s
	sub := n.id
	if n.id == "" && n.uid == "" {
		sc.UserIDMap = nil
		id.Notes = append(id.Notes, "No userId or uid given: userIdMap is not evaluated.")
	}
	if sub == "" {
		sub = "0" // no user has id 0: it matches no userIdMap key
	}
	if n.email == "" {
		id.Notes = append(id.Notes, "No email given: a mapping by email is evaluated as if the user had none.")
	}
	chk, err := newCheckSigner(d.now)
	if err != nil {
		id.Notes = append(id.Notes, "Could not evaluate: "+err.Error())
		return id
	}
	issuer := asker.appURL
	if issuer == "" {
		issuer = "http://grafana.invalid/"
	}
	orgID := asker.orgID
	if orgID == 0 {
		orgID = 1
	}
	for _, m := range methods {
		tok, err := chk.token(grafanaClaims(issuer, orgID, sub, n, m, d.now()))
		if err != nil {
			id.Notes = append(id.Notes, "Could not evaluate: "+err.Error())
			return id
		}
		r := request{user: u, orgID: orgID, appURL: issuer, idToken: tok}
		v, err := viewerFor(ctx, &sc, chk.verifier, r)
		var claims *idClaims
		if err == nil {
			claims = unverifiedClaims(tok)
		}
		a := caseAnswer(&sc, v, err, u, claims)
		a.AuthenticatedBy = m
		switch m {
		case "":
			a.Assumes = "a session of a built-in account (authenticatedBy empty)"
		case "password":
			a.Assumes = "signing in with a Grafana password"
		default:
			a.Assumes = "signing in with " + m
		}
		if n.id == "" {
			// The stand-in id is not theirs: say so where it shows.
			a.GrafanaUserID = ""
			a.Refusal = strings.ReplaceAll(a.Refusal, "user:"+sub, "user:<id>")
			a.Summary = strings.ReplaceAll(a.Summary, "user:"+sub, "user:<id>")
		}
		id.Cases = append(id.Cases, a)
	}
	return id
}

// caseAnswer is a named user's answer in one case.
func caseAnswer(s *models.Settings, v Viewer, err error, u *backend.User, claims *idClaims) Answer {
	if err != nil {
		return refused(err)
	}
	a := explain(s, v, u, claims)
	a.Summary = strings.Replace(a.Summary, "You are seen as", "Seen as", 1)
	a.Summary = strings.ReplaceAll(a.Summary, "your own jobs", "their own jobs")
	a.Summary = strings.ReplaceAll(a.Summary, "accounts you are PI of", "accounts they are PI of")
	return a
}

// grafanaClaims are the claims Grafana 11/12 put in the ID token of user
// n signing in with method, for org orgID of the Grafana at issuer.
func grafanaClaims(issuer string, orgID int64, id string, n namedUser, method string, now time.Time) jwt.MapClaims {
	ns := "default"
	if orgID != 1 {
		ns = "org-" + strconv.FormatInt(orgID, 10)
	}
	c := jwt.MapClaims{"iss": issuer, "aud": []string{"org:" + strconv.FormatInt(orgID, 10)}, "sub": "user:" + id,
		"type": "user", "namespace": ns, "username": n.login, "authenticatedBy": method,
		"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix()}
	if n.uid != "" {
		c["identifier"] = n.uid
	}
	if n.email != "" {
		c["email"] = n.email
	}
	return c
}

// checkSigner signs the named-user check's tokens with a key made for one
// check; its verifier trusts that key alone and reaches no network.
type checkSigner struct {
	key      *ecdsa.PrivateKey
	kid      string
	verifier *idVerifier
}

func newCheckSigner(now func() time.Time) (*checkSigner, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making the check's key: %w", err)
	}
	raw, err := key.PublicKey.Bytes()
	if err != nil {
		return nil, fmt.Errorf("encoding the check's key: %w", err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	kid := "jobsight-identity-check"
	jwks, err := json.Marshal(map[string]any{"keys": []map[string]string{{"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
		"x": enc(raw[1:33]), "y": enc(raw[33:])}}})
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: jwksOnly(jwks)}
	return &checkSigner{key: key, kid: kid, verifier: newIDVerifier(client, now)}, nil
}

func (c *checkSigner) token(claims jwt.MapClaims) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	t.Header["kid"] = c.kid
	t.Header["typ"] = "jwt"
	return t.SignedString(c.key)
}

// jwksOnly is a transport that answers every request for Grafana's
// signing keys with jwks, and nothing else: the check's verifier never
// reaches the network.
type jwksOnly []byte

func (j jwksOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	res := &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: r}
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/"+signingKeysPath) {
		res.StatusCode = http.StatusOK
		res.Header.Set("Content-Type", "application/json")
		res.Body = io.NopCloser(strings.NewReader(string(j)))
	}
	res.Status = strconv.Itoa(res.StatusCode) + " " + http.StatusText(res.StatusCode)
	return res, nil
}
