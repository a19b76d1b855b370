package plugin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/pkg/models"
)

// Viewer is who a request acts for, as far as Jobsight's access rules go.
//
//   - Full: the request comes from Grafana's alert engine (whatever the
//     role settings), or the Grafana role is in fullAccessRoles (default
//     Admin and Editor): every job is visible.
//   - Otherwise the Grafana user is mapped to a Slurm user (identitySource,
//     userIdMap, userMap, userMapping) and sees that user's jobs, plus
//     every job of the accounts it is PI of (accountPIs), with the users'
//     real names: a restricted viewer never meets a job it may not see.
type Viewer struct {
	Full bool
	// Alert is true for a query from Grafana's alert engine.
	Alert bool
	// Login is the Grafana login (for messages and logs).
	Login string
	// User is the Slurm user of a restricted viewer.
	User string
	// Accounts are the accounts a restricted viewer is PI of.
	Accounts []string
}

// errNoUser: a request without a Grafana user that is not from the alert
// engine is refused.
var errNoUser = errors.New("the request carries no Grafana user: Jobsight answers only signed-in users and Grafana's alert engine")

// schedulerLogin is the login of the identity Grafana's alert scheduler
// queries datasources as (ngalert's SchedulerUserFor: a service identity
// with org role Admin, no email, no ID token).
const schedulerLogin = "grafana_scheduler"

// request is what Grafana tells a datasource about who asks: the
// plugin context's user and org, its root URL (GF_APP_URL) and the
// request's headers.
type request struct {
	user  *backend.User
	orgID int64
	// appURL is Grafana's root_url, the issuer of its ID tokens.
	appURL string
	// fromAlert: the FromAlert header is "true". Grafana's alert engine
	// sets it, but Grafana also copies it from a user's own HTTP request
	// (the rule editor's preview sends it), so it alone proves nothing.
	fromAlert bool
	// idToken is the forwarded X-Grafana-Id header.
	idToken string
}

// requestOf reads a request's identity from its plugin context and
// headers. get returns a header by name (QueryData's forwarded HTTP
// headers, or CallResource's).
func requestOf(pc backend.PluginContext, fromAlert string, get func(string) string) request {
	r := request{user: pc.User, orgID: pc.OrgID, fromAlert: strings.EqualFold(fromAlert, "true"),
		idToken: strings.TrimSpace(get(backend.GrafanaUserSignInTokenHeaderName))}
	if pc.GrafanaConfig != nil {
		r.appURL, _ = pc.GrafanaConfig.AppURL()
	}
	return r
}

// isAlertEngine says whether a request is the alert scheduler's own. Its
// FromAlert header can be imitated (Grafana forwards a user's), so the
// identity must be the scheduler's too: no user at all, or the
// scheduler's service identity (login grafana_scheduler, role Admin, no
// email) — a user renamed grafana_scheduler keeps their own role — and no
// forwarded ID token, which Grafana signs for every signed-in user when
// ID forwarding is on and never for the scheduler.
func (r request) isAlertEngine() bool {
	if !r.fromAlert || r.idToken != "" {
		return false
	}
	u := r.user
	return u == nil || (u.Login == schedulerLogin && u.Role == "Admin" && u.Email == "")
}

// viewerFor resolves the Viewer of a request. ids verifies ID tokens
// (identitySource idToken).
func viewerFor(ctx context.Context, s *models.Settings, ids *idVerifier, r request) (Viewer, error) {
	if r.isAlertEngine() {
		return Viewer{Full: true, Alert: true, Login: "alert engine"}, nil
	}
	u := r.user
	if u == nil {
		return Viewer{}, errNoUser
	}
	if u.Login == "" && u.Email == "" {
		// An identity without a name (an anonymous visitor) is never
		// the alert engine, whatever headers it sends.
		return Viewer{}, errors.New("the request's Grafana user has no login: Jobsight answers signed-in users only")
	}
	// The org role is Grafana's to give: a user cannot choose it.
	v := Viewer{Login: u.Login}
	for _, role := range s.FullAccessRoles {
		if strings.EqualFold(role, u.Role) {
			v.Full = true
			return v, nil
		}
	}
	user, err := slurmUser(ctx, s, ids, r)
	if err != nil {
		return Viewer{}, err
	}
	v.User = user
	for account, pis := range s.AccountPIs {
		for _, pi := range pis {
			if pi == v.User {
				v.Accounts = append(v.Accounts, account)
			}
		}
	}
	sort.Strings(v.Accounts)
	return v, nil
}

// slurmUser maps a restricted viewer to a Slurm user, or says why not.
func slurmUser(ctx context.Context, s *models.Settings, ids *idVerifier, r request) (string, error) {
	u := r.user
	if s.IdentitySource == models.IdentityUnverifiedLogin {
		if m := byName(s, u.Login, u.Email); m != "" {
			return m, nil
		}
		return "", fmt.Errorf("your Grafana user %q has no Slurm user (userMapping %s): ask an admin to map it", u.Login, s.UserMapping)
	}
	if r.idToken == "" {
		return "", fmt.Errorf("Grafana sent no ID token for %q, so Jobsight cannot tell which Slurm user you are: "+
			"Grafana must forward it (Grafana 10.3 or later with the idForwarding feature on; its first releases also need forwardGrafanaIdToken in this datasource)", u.Login)
	}
	claims, err := ids.verify(ctx, r.idToken, r.appURL, s.GrafanaURL, r.orgID)
	if err != nil {
		return "", err
	}
	id := claims.userID()
	if id == "" {
		return "", fmt.Errorf("Grafana's ID token is for %q, not a user: Jobsight maps users only", claims.Subject)
	}
	// The token is Grafana's word about this request's user: its login
	// must be the one the plugin context names.
	login, email := claims.login(), claims.Email
	if login != "" && login != u.Login {
		return "", fmt.Errorf("Grafana's ID token is for %q, but the request is %q's", login, u.Login)
	}
	if login == "" {
		login = u.Login
	}
	if email == "" {
		email = u.Email
	}
	if _, m, ok := userIDMapEntry(s.UserIDMap, claims); ok {
		return m, nil
	}
	if claims.AuthenticatedBy == renderModule {
		// Grafana's image renderer (shared panel images, scheduled
		// reports) signs in with a render key Grafana issued for the
		// user who asked: the token names that user (sub, identifier)
		// but not how they signed in, and the login and email are the
		// stored ones, which a built-in account can have edited.
		return "", fmt.Errorf("your Grafana account %q (%s) is seen here through Grafana's image renderer (authenticatedBy render), which does not say how you signed in, "+
			"so Jobsight maps it only by its user id: ask an admin to add %q (or its uid) to userIdMap, or render as a role in fullAccessRoles",
			u.Login, claims.Subject, claims.Subject)
	}
	if !trustedMethod(s.TrustedAuthMethods, claims.AuthenticatedBy) {
		how := claims.AuthenticatedBy
		if how == "" {
			how = "Grafana's own login"
		}
		return "", fmt.Errorf("your Grafana account %q (%s) signed in with %s, whose login and email its owner can change, so Jobsight does not map it by name: "+
			"ask an admin to add it to userIdMap, or sign in through the site's identity provider (trustedAuthMethods: %s)",
			u.Login, claims.Subject, how, strings.Join(s.TrustedAuthMethods, ", "))
	}
	if m := byName(s, login, email); m != "" {
		return m, nil
	}
	return "", fmt.Errorf("your Grafana user %q has no Slurm user (userMapping %s): ask an admin to map it", login, s.UserMapping)
}

// userIDMapEntry finds the token's userIdMap entry, its key and Slurm user:
// "user:<numeric id>" is the token's sub, a uid its identifier (Grafana
// 11/12: sub is the typed numeric id, identifier the uid). Each key form
// is matched against its own claim only, so a uid can never be taken for
// another user's numeric id.
func userIDMapEntry(m map[string]string, claims *idClaims) (key, user string, ok bool) {
	if u, ok := m[claims.Subject]; ok {
		return claims.Subject, u, true
	}
	if uid := claims.Identifier; uid != "" && !strings.Contains(uid, ":") {
		if u, ok := m[uid]; ok {
			return uid, u, true
		}
	}
	return "", "", false
}

// renderModule is the authenticatedBy of a request from Grafana's image
// renderer (grafana/grafana pkg/services/login: RenderModule; set by the
// render-key client, pkg/services/authn/clients/render.go).
const renderModule = "render"

// trustedMethod says whether authenticatedBy is in methods (a trailing *
// matches a prefix). An empty authenticatedBy is never trusted.
func trustedMethod(methods []string, authenticatedBy string) bool {
	if authenticatedBy == "" {
		return false
	}
	for _, m := range methods {
		if p, ok := strings.CutSuffix(m, "*"); ok {
			if p != "" && strings.HasPrefix(authenticatedBy, p) {
				return true
			}
		} else if m == authenticatedBy {
			return true
		}
	}
	return false
}

// byName maps a login and email to a Slurm user by userMap and
// userMapping ("" when none).
func byName(s *models.Settings, login, email string) string {
	if m, ok := s.UserMap[login]; ok {
		return m
	}
	switch s.UserMapping {
	case models.UserMappingEmail:
		return email
	case models.UserMappingEmailLocalPart:
		local, _, ok := strings.Cut(email, "@")
		if !ok {
			return ""
		}
		return local
	default:
		return login
	}
}

// esVisibility is the job-index clause limiting a restricted viewer to
// their jobs (nil for Full).
func (v Viewer) esVisibility() map[string]any {
	if v.Full {
		return nil
	}
	clauses := []any{esTerm("user", v.User)}
	if len(v.Accounts) > 0 {
		clauses = append(clauses, esTerms("account", v.Accounts))
	}
	return esShould(clauses...)
}

// canSee says whether the viewer may see a job of user in account.
func (v Viewer) canSee(user, account string) bool {
	if v.Full {
		return true
	}
	if user == v.User {
		return true
	}
	for _, a := range v.Accounts {
		if a == account {
			return true
		}
	}
	return false
}
