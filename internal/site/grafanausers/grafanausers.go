// Package grafanausers builds the datasource's userIdMap for Grafana's
// built-in accounts (docs/datasource.md, "Building userIdMap for built-in
// accounts"): it lists the users of one Grafana organization through
// Grafana's HTTP API with a service-account token, matches each to a Slurm
// user by login (and, for the site's mail domains, by email local part),
// and returns the map for an admin to review, with every user it could not
// map and why.
//
// Built-in accounts can rename themselves (login and email), so a match by
// name is a proposal, never a proof: the map is printed for review, and an
// entry already in the current map is kept as it is (a changed name is
// reported, not followed).
package grafanausers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// User is one entry of Grafana's GET /api/org/users/search answer
// (grafana/grafana pkg/services/org/model.go OrgUserDTO): the fields used
// here. uid is absent before Grafana 11.
type User struct {
	UserID     int64    `json:"userId"`
	UID        string   `json:"uid"`
	Login      string   `json:"login"`
	Email      string   `json:"email"`
	Name       string   `json:"name"`
	Role       string   `json:"role"`
	IsDisabled bool     `json:"isDisabled"`
	AuthLabels []string `json:"authLabels"`
}

// Key is the userIdMap key of u: "user:<numeric id>", the ID token's sub.
func (u User) Key() string { return "user:" + strconv.FormatInt(u.UserID, 10) }

// BuiltIn reports whether u has no external-login record: Grafana labels
// a user with the provider of its stored external login (authLabels: LDAP,
// SAML, JWT, Auth Proxy, GitHub, Generic OAuth, ...), and a built-in
// account (login and password in Grafana's database) with none.
func (u User) BuiltIn() bool { return len(u.AuthLabels) == 0 }

// searchPage is the answer of GET /api/org/users/search.
type searchPage struct {
	TotalCount int64  `json:"totalCount"`
	OrgUsers   []User `json:"orgUsers"`
	Page       int    `json:"page"`
	PerPage    int    `json:"perPage"`
}

// ErrUnauthorized: Grafana answered 401, the token is not valid (expired,
// revoked, mistyped, another Grafana's).
var ErrUnauthorized = errors.New("Grafana refused the token (401 Unauthorized): it is expired, revoked or not this Grafana's")

// ErrForbidden: Grafana answered 403, the service account may not list
// the organization's users.
var ErrForbidden = errors.New("Grafana refused to list the organization's users (403 Forbidden): give the service account the org role Admin (or, in Grafana Enterprise, a role with org.users:read on users:*)")

// Client lists a Grafana organization's users.
type Client struct {
	// BaseURL is Grafana's root URL (https://grafana.example.org, with a
	// sub-path if Grafana is served under one).
	BaseURL string
	// Token is a service-account token; it is sent only as
	// "Authorization: Bearer".
	Token string
	// HTTP is the client to use (http.DefaultClient when nil).
	HTTP *http.Client
	// PerPage is the page size asked for (default 500).
	PerPage int
}

// maxPages bounds the paging whatever Grafana's totalCount says.
const maxPages = 10000

// Users lists every user of the token's organization, page by page.
func (c *Client) Users(ctx context.Context) ([]User, error) {
	base, err := url.Parse(strings.TrimRight(c.BaseURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" || base.User != nil {
		return nil, fmt.Errorf("Grafana URL %q: want http(s)://host[:port][/path], without credentials", c.BaseURL)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	per := c.PerPage
	if per <= 0 {
		per = 500
	}
	var all []User
	seen := map[int64]bool{}
	for page := 1; page <= maxPages; page++ {
		u := *base
		u.Path += "/api/org/users/search"
		u.RawQuery = url.Values{"perpage": {strconv.Itoa(per)}, "page": {strconv.Itoa(page)}}.Encode()
		var p searchPage
		if err := c.get(ctx, hc, u.String(), &p); err != nil {
			return nil, err
		}
		for _, usr := range p.OrgUsers {
			if usr.UserID <= 0 {
				return nil, fmt.Errorf("%s: a user without a numeric userId (login %q): not Grafana's org users answer", u.Path, usr.Login)
			}
			if !seen[usr.UserID] { // pages may shift while users are added
				seen[usr.UserID] = true
				all = append(all, usr)
			}
		}
		// Grafana drops hidden users from a page after counting them, so
		// a page may be short: stop on an empty page or past totalCount.
		if len(p.OrgUsers) == 0 || int64(page)*int64(per) >= p.TotalCount {
			return all, nil
		}
	}
	return nil, fmt.Errorf("more than %d pages of users: stopped", maxPages)
}

func (c *Client) get(ctx context.Context, hc *http.Client, u string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("listing Grafana's users: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("listing Grafana's users: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return ErrUnauthorized
	case resp.StatusCode == http.StatusForbidden:
		return ErrForbidden
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("listing Grafana's users: GET %s: %s: %s", req.URL.Path, resp.Status, message(body))
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("listing Grafana's users: GET %s: not Grafana's JSON answer: %w", req.URL.Path, err)
	}
	return nil
}

// message is Grafana's error message, or the start of the body.
func message(body []byte) string {
	var m struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &m) == nil && m.Message != "" {
		return strconv.Quote(m.Message)
	}
	s := string(body)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strconv.Quote(s)
}

// SlurmUsers are the site's user names, with the uids each was listed
// with (a name listed with two uids is ambiguous).
type SlurmUsers struct {
	uids   map[string][]string
	folded map[string][]string // lower-case name -> names
}

// Names is the number of distinct names.
func (s *SlurmUsers) Names() int { return len(s.uids) }

// ReadSlurmUsers reads the site's users: passwd lines (getent passwd:
// name:x:uid:gid:...), of which only those with uid >= minUID count, or
// one name per line (sacctmgr -nP show users format=user). Blank lines and
// lines starting with # are skipped; a name with spaces or control
// characters is no Unix user and is skipped too (ignored counts them).
func ReadSlurmUsers(r io.Reader, minUID int64) (s *SlurmUsers, ignored int, err error) {
	s = &SlurmUsers{uids: map[string][]string{}, folded: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, uid := line, ""
		if f := strings.Split(line, ":"); len(f) > 1 {
			name = f[0]
			if len(f) >= 3 {
				uid = f[2]
				n, err := strconv.ParseInt(uid, 10, 64)
				if err != nil {
					ignored++
					continue
				}
				if n < minUID {
					continue
				}
			}
		}
		if !validName(name) {
			ignored++
			continue
		}
		if !contains(s.uids[name], uid) {
			if len(s.uids[name]) == 0 {
				k := strings.ToLower(name)
				s.folded[k] = append(s.folded[k], name)
			}
			s.uids[name] = append(s.uids[name], uid)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("reading the Slurm users: %w", err)
	}
	return s, ignored, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func validName(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar {
			return false
		}
	}
	return true
}

// Options are the matching rules.
type Options struct {
	// EmailDomains: an email (or an email-shaped login) at one of these
	// domains (compared case-insensitively) proposes its local part.
	// Empty: emails are not used.
	EmailDomains []string
	// Include: which accounts are mapped: "builtin" (no external-login
	// record) and/or auth labels as Grafana reports them ("Auth Proxy",
	// "LDAP", ...; case-insensitive), or "all". Default builtin.
	Include []string
	// Current is the userIdMap in use, whose entries are kept (nil: none).
	Current map[string]string
	// FullAccessRoles are the datasource's fullAccessRoles: an unmatched
	// user with one of them is reported without needing review.
	FullAccessRoles []string
}

// Problem is a user the map leaves out, or an entry worth a look.
type Problem struct {
	Key    string // user:<id>, or a current map's key
	Login  string
	Email  string
	Kind   string // "unmatched", "ambiguous", "changed", "dropped", "unchecked"
	Reason string
	// FullAccessRole is the org role of an unmatched or ambiguous user
	// when it is in Options.FullAccessRoles: such a user sees every job
	// without an entry, so it needs none as long as it keeps the role.
	FullAccessRole string
}

func (p Problem) String() string {
	s := fmt.Sprintf("%-9s %s login %s email %s: %s", p.Kind, p.Key, strconv.Quote(p.Login), strconv.Quote(p.Email), p.Reason)
	if p.FullAccessRole != "" {
		s += fmt.Sprintf(" (role %s sees every job: no entry needed while it keeps that role)", p.FullAccessRole)
	}
	return s
}

// NeedsReview counts the problems an admin must look at: all but the
// unmatched or ambiguous users with a full-access role.
func (r Result) NeedsReview() int {
	n := 0
	for _, p := range r.Problems {
		if p.FullAccessRole == "" {
			n++
		}
	}
	return n
}

// Result is the map and what was left out.
type Result struct {
	Map      map[string]string
	Added    int            // entries new against Current
	Kept     int            // entries of Current kept
	Skipped  map[string]int // users not selected, by their auth label ("disabled" for disabled accounts)
	Selected int
	Problems []Problem
}

// Build matches users to the Slurm users under opts.
func Build(users []User, slurm *SlurmUsers, opts Options) Result {
	res := Result{Map: map[string]string{}, Skipped: map[string]int{}}
	include := map[string]bool{}
	for _, i := range opts.Include {
		include[strings.ToLower(strings.TrimSpace(i))] = true
	}
	if len(include) == 0 {
		include["builtin"] = true
	}
	domains := map[string]bool{}
	for _, d := range opts.EmailDomains {
		domains[strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "@"))] = true
	}
	byKey := map[string]User{}
	byUID := map[string]User{}
	for _, u := range users {
		byKey[u.Key()] = u
		if u.UID != "" {
			byUID[u.UID] = u
		}
	}
	// The current map's entries: kept while their user exists.
	held := map[int64]string{} // userId -> current Slurm user
	heldKey := map[int64]string{}
	for _, k := range sortedKeys(opts.Current) {
		v := opts.Current[k]
		u, ok := byKey[k]
		if !ok {
			u, ok = byUID[k]
		}
		switch {
		case ok:
			held[u.UserID] = v
			heldKey[u.UserID] = k
			res.Map[k] = v
			res.Kept++
		case !strings.HasPrefix(k, "user:") && len(byUID) == 0:
			// A uid key, and this Grafana's answer has no uids.
			res.Map[k] = v
			res.Kept++
			res.Problems = append(res.Problems, Problem{Key: k, Kind: "unchecked", Reason: fmt.Sprintf("kept %q: this Grafana does not list uids, so whether the user still exists is not known", v)})
		default:
			res.Problems = append(res.Problems, Problem{Key: k, Kind: "dropped", Reason: fmt.Sprintf("no such user in the organization any more: the entry (%q) is left out, so that a new account given its id cannot inherit it", v)})
		}
	}
	// Proposals for the selected users.
	type proposal struct {
		u    User
		name string
		why  string
	}
	var props []proposal
	for _, u := range users {
		if !selected(u, include) {
			label := "external login"
			if len(u.AuthLabels) > 0 {
				label = strings.Join(u.AuthLabels, ",")
			}
			if u.IsDisabled {
				label = "disabled"
			}
			res.Skipped[label]++
			continue
		}
		res.Selected++
		name, why, prob := match(u, slurm, domains)
		if cur, ok := held[u.UserID]; ok {
			if prob == "" && name != cur {
				res.Problems = append(res.Problems, Problem{Key: heldKey[u.UserID], Login: u.Login, Email: u.Email, Kind: "changed",
					Reason: fmt.Sprintf("kept %q; the %s now gives %q: was the account renamed? change the entry by hand only if this is the same person", cur, why, name)})
			}
			continue
		}
		if prob != "" {
			kind := "unmatched"
			if strings.HasPrefix(prob, "ambiguous: ") {
				kind, prob = "ambiguous", strings.TrimPrefix(prob, "ambiguous: ")
			}
			res.Problems = append(res.Problems, Problem{Key: u.Key(), Login: u.Login, Email: u.Email, Kind: kind, Reason: prob,
				FullAccessRole: fullAccess(u.Role, opts.FullAccessRoles)})
			continue
		}
		props = append(props, proposal{u, name, why})
	}
	// A Slurm user claimed twice (by two accounts, or by an account and a
	// current entry) goes to nobody new.
	claims := map[string][]string{}
	for id, v := range held {
		claims[v] = append(claims[v], heldKey[id])
	}
	for _, p := range props {
		claims[p.name] = append(claims[p.name], p.u.Key())
	}
	for _, p := range props {
		if c := claims[p.name]; len(c) > 1 {
			others := make([]string, 0, len(c)-1)
			for _, k := range c {
				if k != p.u.Key() {
					others = append(others, k)
				}
			}
			sort.Strings(others)
			res.Problems = append(res.Problems, Problem{Key: p.u.Key(), Login: p.u.Login, Email: p.u.Email, Kind: "ambiguous",
				Reason:         fmt.Sprintf("its %s gives Slurm user %q, which %s also claims", p.why, p.name, strings.Join(others, ", ")),
				FullAccessRole: fullAccess(p.u.Role, opts.FullAccessRoles)})
			continue
		}
		res.Map[p.u.Key()] = p.name
		res.Added++
	}
	sort.SliceStable(res.Problems, func(i, j int) bool { return keyLess(res.Problems[i].Key, res.Problems[j].Key) })
	return res
}

func fullAccess(role string, roles []string) string {
	for _, r := range roles {
		if strings.EqualFold(strings.TrimSpace(r), role) && role != "" {
			return role
		}
	}
	return ""
}

func selected(u User, include map[string]bool) bool {
	if u.IsDisabled {
		return false
	}
	if include["all"] || (include["builtin"] && u.BuiltIn()) {
		return true
	}
	for _, l := range u.AuthLabels {
		if include[strings.ToLower(l)] {
			return true
		}
	}
	return false
}

// match proposes u's Slurm user: the login, and the local part of an
// email (or email-shaped login) at one of domains; problem says why none.
func match(u User, slurm *SlurmUsers, domains map[string]bool) (name, why, problem string) {
	type cand struct{ name, rule string }
	var cands []cand
	if u.Login != "" && !strings.Contains(u.Login, "@") {
		cands = append(cands, cand{u.Login, "login"})
	}
	for _, e := range []struct{ addr, rule string }{{u.Email, "email"}, {u.Login, "login"}} {
		at := strings.LastIndex(e.addr, "@")
		if at <= 0 || !domains[strings.ToLower(e.addr[at+1:])] {
			continue
		}
		cands = append(cands, cand{e.addr[:at], e.rule + "'s local part"})
	}
	if len(cands) == 0 {
		if len(domains) == 0 {
			return "", "", "its login is an email address: give --email-domain to match its local part"
		}
		return "", "", "no login to match and no email at " + strings.Join(sortedKeys(domains), ", ")
	}
	var found []cand
	var hints []string
	for _, c := range cands {
		switch uids := slurm.uids[c.name]; {
		case len(uids) > 1:
			return "", "", fmt.Sprintf("ambiguous: its %s %q is listed as a Slurm user %d times, with uids %s", c.rule, c.name, len(uids), strings.Join(uids, ", "))
		case len(uids) == 1:
			found = append(found, c)
		default:
			if f := slurm.folded[strings.ToLower(c.name)]; len(f) > 0 {
				hints = append(hints, fmt.Sprintf("its %s %q differs only in case from Slurm user %s", c.rule, c.name, quoteAll(f)))
			}
		}
	}
	if len(found) == 0 {
		var tried []string
		for _, c := range cands {
			tried = append(tried, fmt.Sprintf("%s %q", c.rule, c.name))
		}
		p := "no Slurm user named like its " + strings.Join(tried, " or ")
		if len(hints) > 0 {
			p += " (" + strings.Join(hints, "; ") + ": map it by hand if that is the same person)"
		}
		return "", "", p
	}
	for _, c := range found[1:] {
		if c.name != found[0].name {
			return "", "", fmt.Sprintf("ambiguous: its %s gives Slurm user %q, its %s %q", found[0].rule, found[0].name, c.rule, c.name)
		}
	}
	rules := []string{found[0].rule}
	for _, c := range found[1:] {
		if !contains(rules, c.rule) {
			rules = append(rules, c.rule)
		}
	}
	return found[0].name, strings.Join(rules, " and "), ""
}

func quoteAll(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// keyLess orders user:<id> keys by number, then other keys by name.
func keyLess(a, b string) bool {
	na, ea := strconv.ParseInt(strings.TrimPrefix(a, "user:"), 10, 64)
	nb, eb := strconv.ParseInt(strings.TrimPrefix(b, "user:"), 10, 64)
	switch {
	case ea == nil && eb == nil:
		return na < nb
	case ea == nil:
		return true
	case eb == nil:
		return false
	}
	return a < b
}

// WriteMap writes m as {"userIdMap": {...}}, one entry a line, ordered by
// user id: valid JSON, stable for diff, escaped by encoding/json.
func WriteMap(w io.Writer, m map[string]string) error {
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return keyLess(keys[i], keys[j]) })
	var b strings.Builder
	b.WriteString("{\n  \"userIdMap\": {")
	for i, k := range keys {
		kj, err := json.Marshal(k)
		if err != nil {
			return err
		}
		vj, err := json.Marshal(m[k])
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n    ")
		b.Write(kj)
		b.WriteString(": ")
		b.Write(vj)
	}
	if len(keys) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("}\n}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ReadCurrent reads the userIdMap in use from data: this command's own
// output ({"userIdMap": {...}}), the datasource's whole jsonData, or a
// bare map.
func ReadCurrent(data []byte) (map[string]string, error) {
	var wrapped struct {
		UserIDMap map[string]string `json:"userIdMap"`
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if _, ok := raw["userIdMap"]; ok {
		if err := json.Unmarshal(data, &wrapped); err != nil {
			return nil, fmt.Errorf("userIdMap: %w", err)
		}
		return wrapped.UserIDMap, nil
	}
	var bare map[string]string
	if err := json.Unmarshal(data, &bare); err != nil {
		return nil, fmt.Errorf("neither {\"userIdMap\": {...}} nor a map of strings: %w", err)
	}
	return bare, nil
}
