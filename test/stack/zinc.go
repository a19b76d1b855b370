package stack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// ZincVersion is the ZincSearch release the stack builds and runs.
const ZincVersion = "v0.4.10"

// zincESVersion is the Elasticsearch version ZincSearch reports from its
// info endpoint, so that Elasticsearch 8 clients accept it.
const zincESVersion = "8.19.0"

// Environment variables that select a real Elasticsearch for the tests
// instead of a ZincSearch started by them.
const (
	EnvTestESURL          = "JOBSIGHT_TEST_ES_URL"           // e.g. https://es.example:9200
	EnvTestESUser         = "JOBSIGHT_TEST_ES_USER"          // basic-auth user, optional
	EnvTestESPasswordFile = "JOBSIGHT_TEST_ES_PASSWORD_FILE" // #nosec G101 -- the name of a variable naming a password file, no password
	EnvTestESCAFile       = "JOBSIGHT_TEST_ES_CA_FILE"       // PEM CA bundle for https, optional
	EnvZincBin            = "JOBSIGHT_ZINC_BIN"              // a prebuilt zincsearch binary, optional
)

// ESServer is an Elasticsearch-API server and the credentials to use it.
// For an external cluster (External true) Stop does nothing.
type ESServer struct {
	*Server
	User       string
	Password   string
	CACertFile string // PEM CA bundle for https, empty for http
	External   bool   // a real cluster given by JOBSIGHT_TEST_ES_URL, not started here
}

// StartElasticsearch returns the Elasticsearch-API server the integration
// tests use: the real cluster named by JOBSIGHT_TEST_ES_URL (with
// JOBSIGHT_TEST_ES_USER, JOBSIGHT_TEST_ES_PASSWORD_FILE and
// JOBSIGHT_TEST_ES_CA_FILE) when that is set, otherwise a ZincSearch started
// by StartZinc under dir. Tests against an external cluster must use index
// names of their own, since other data may live there.
func StartElasticsearch(ctx context.Context, dir string) (*ESServer, error) {
	url := os.Getenv(EnvTestESURL)
	if url == "" {
		return StartZinc(ctx, dir)
	}
	es := &ESServer{
		Server:     &Server{Name: "elasticsearch", URL: strings.TrimRight(url, "/"), Dir: dir},
		User:       os.Getenv(EnvTestESUser),
		CACertFile: os.Getenv(EnvTestESCAFile),
		External:   true,
	}
	if f := os.Getenv(EnvTestESPasswordFile); f != "" {
		b, err := os.ReadFile(f) // #nosec G703 -- the developer's own password file, named in their environment
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", EnvTestESPasswordFile, err)
		}
		es.Password = strings.TrimSpace(string(b))
	}
	return es, nil
}

// ZincBinary returns the path of a ZincSearch binary: JOBSIGHT_ZINC_BIN when
// set, otherwise the one scripts/build-zincsearch.sh builds or finds in its
// cache ($JOBSIGHT_CACHE or ~/.cache/jobsight). The first build takes about a
// minute and needs the Go toolchain and the module proxy.
func ZincBinary(ctx context.Context) (string, error) {
	if bin := os.Getenv(EnvZincBin); bin != "" {
		if _, err := os.Stat(bin); err != nil { // #nosec G703 -- the developer's own binary, named in their environment
			return "", fmt.Errorf("%s: %w", EnvZincBin, err)
		}
		return bin, nil
	}
	bin, err := RunBuildScript(ctx, "scripts/build-zincsearch.sh")
	if err != nil {
		return "", fmt.Errorf("%w (or set %s to a zincsearch binary)", err, EnvZincBin)
	}
	return bin, nil
}

// RunBuildScript runs one of the repository's build scripts (rel, relative
// to the repository root) and returns the path it prints on its last line,
// which must exist.
func RunBuildScript(ctx context.Context, rel string, args ...string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, rel)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := stderr.String()
		if len(msg) > 4000 {
			msg = msg[len(msg)-4000:]
		}
		return "", fmt.Errorf("running %s: %w\n%s", script, err, msg)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	out := strings.TrimSpace(lines[len(lines)-1])
	if _, err := os.Stat(out); err != nil {
		return "", fmt.Errorf("%s printed %q, which does not exist: %w", script, out, err)
	}
	return out, nil
}

// RepoRoot returns the root of the Jobsight repository: two levels above
// this source file when it is still where it was compiled, else the
// directory of the go.mod of the working directory's module.
func RepoRoot() (string, error) {
	const marker = "scripts/build-zincsearch.sh"
	var tried []string
	if _, file, _, ok := runtime.Caller(0); ok {
		root := filepath.Join(filepath.Dir(file), "..", "..")
		if _, err := os.Stat(filepath.Join(root, marker)); err == nil {
			return filepath.Abs(root)
		}
		tried = append(tried, root)
	}
	if out, err := exec.Command("go", "env", "GOMOD").Output(); err == nil {
		if mod := strings.TrimSpace(string(out)); mod != "" && mod != os.DevNull {
			root := filepath.Dir(mod)
			if _, err := os.Stat(filepath.Join(root, marker)); err == nil {
				return root, nil
			}
			tried = append(tried, root)
		}
	}
	return "", fmt.Errorf("cannot find the Jobsight repository (tried %s)", strings.Join(tried, ", "))
}

// StartZinc starts ZincSearch (building it first if no cached build exists)
// on a free port of 127.0.0.1 with its data under dir, and waits until its
// Elasticsearch API answers. The returned URL is the ES API base,
// "http://127.0.0.1:PORT/es". The admin credentials are generated on the
// first start in dir and kept in dir/zinc.credentials (mode 0600), since
// ZincSearch keeps the first admin in its data.
func StartZinc(ctx context.Context, dir string) (*ESServer, error) {
	bin, err := ZincBinary(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, fmt.Errorf("creating zincsearch state directory: %w", err)
	}
	user, password, err := zincCredentials(filepath.Join(dir, "zinc.credentials"))
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	env := []string{
		"ZINC_FIRST_ADMIN_USER=" + user,
		"ZINC_FIRST_ADMIN_PASSWORD=" + password,
		"ZINC_DATA_PATH=" + filepath.Join(dir, "data"),
		"ZINC_SERVER_ADDRESS=127.0.0.1",
		"ZINC_SERVER_PORT=" + strconv.Itoa(port),
		"ZINC_TELEMETRY=false",
		"ZINC_SENTRY=false",
		"ZINC_PROFILER=false",
		"ZINC_PLUGIN_ES_VERSION=" + zincESVersion,
		"GIN_MODE=release",
	}
	// ZincSearch cuts every terms and date_histogram aggregation at 1,000
	// buckets unless told otherwise (Elasticsearch's limit,
	// search.max_buckets, is 65,536 per answer): an hourly histogram of a
	// year has 8,760.
	if os.Getenv("ZINC_AGGREGATION_TERMS_SIZE") == "" {
		env = append(env, "ZINC_AGGREGATION_TERMS_SIZE=20000")
	}
	s, err := startProcess("zincsearch", dir, env, bin)
	if err != nil {
		return nil, err
	}
	s.URL = "http://127.0.0.1:" + strconv.Itoa(port) + "/es"
	if err := s.waitHTTP(ctx, s.URL+"/"); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return &ESServer{Server: s, User: user, Password: password}, nil
}

// zincCredentials reads "user:password" from path, or generates a random
// pair and writes it there.
func zincCredentials(path string) (user, password string, err error) {
	b, err := os.ReadFile(path)
	if err == nil {
		u, p, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
		if !ok || u == "" || p == "" {
			return "", "", fmt.Errorf("%s: want one line user:password", path)
		}
		return u, p, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", "", fmt.Errorf("reading zincsearch credentials: %w", err)
	}
	var r [16]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", "", fmt.Errorf("generating zincsearch password: %w", err)
	}
	user, password = "jobsight", hex.EncodeToString(r[:])
	if err := os.WriteFile(path, []byte(user+":"+password+"\n"), 0o600); err != nil {
		return "", "", fmt.Errorf("writing zincsearch credentials: %w", err)
	}
	return user, password, nil
}

// ZincUser makes a ZincSearch user whose role (of the same name) has
// exactly perms, ZincSearch's permissions, one per API route (e.g.
// "index.CreateES", "document.ESBulk", "search.SearchDSL": a role there
// has no per-index privileges). It returns the user's login; the
// password is the one given.
func (s *ESServer) ZincUser(name, password string, perms []string) (string, error) {
	if s.External {
		return "", errors.New("ZincUser: an external Elasticsearch, not ZincSearch")
	}
	if err := s.zincAPI(http.MethodPost, "/api/role", map[string]any{"_id": name, "name": name, "permission": perms}); err != nil {
		return "", err
	}
	user := name + "-user"
	err := s.zincAPI(http.MethodPost, "/api/user", map[string]any{"_id": user, "name": name, "password": password, "role": name})
	return user, err
}

// zincAPI sends a request to ZincSearch's own API (under /api) as its
// administrator.
func (s *ESServer) zincAPI(method, path string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(s.URL, "/es")+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.SetBasicAuth(s.User, s.Password)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("zincsearch %s %s: %s: %s", method, path, res.Status, msg)
	}
	return nil
}
