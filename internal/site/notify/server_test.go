package notify

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// This file is a real SMTP server (github.com/emersion/go-smtp) on
// loopback for the tests: STARTTLS or implicit TLS with a certificate made
// here, AUTH PLAIN, and recipients it can be told to refuse.

const (
	testUser = "jobsight"
	testPass = "s3cret-Pa55word"
)

// testCert is a self-signed certificate for 127.0.0.1 and localhost,
// made once per test binary.
var testCert = sync.OnceValues(func() (tls.Certificate, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "jobsight test SMTP"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
})

// Server TLS modes.
const (
	srvStartTLS = "starttls"
	srvImplicit = "implicit"
	srvPlain    = "plain"
)

// received is one message as the server got it.
type received struct {
	from     string
	rcpts    []string
	data     []byte
	authUser string
	tls      bool
}

// testServer is a running SMTP server and what it received.
type testServer struct {
	t      *testing.T
	mode   string
	addr   string
	port   int
	caFile string

	mu     sync.Mutex
	srv    *smtp.Server
	ln     net.Listener // closed by down even if Serve has not started yet
	msgs   []received
	conns  map[*smtp.Conn]bool
	auths  int
	refuse map[string]*smtp.SMTPError // recipient → reply
	notify chan struct{}
}

// startServer starts a server in the given mode on 127.0.0.1.
func startServer(t *testing.T, mode string) *testServer {
	t.Helper()
	_, caPEM := testCert()
	ts := &testServer{t: t, mode: mode, refuse: map[string]*smtp.SMTPError{}, conns: map[*smtp.Conn]bool{}, notify: make(chan struct{}, 100)}
	ts.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ts.caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = ln.Addr().String()
	ts.port = ln.Addr().(*net.TCPAddr).Port
	ts.serve(ln)
	t.Cleanup(ts.down)
	return ts
}

// serve runs a fresh go-smtp server on ln.
func (ts *testServer) serve(ln net.Listener) {
	cert, _ := testCert()
	s := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		ts.mu.Lock()
		ts.conns[c] = true // NewSession runs again after STARTTLS
		ts.mu.Unlock()
		return &testSession{ts: ts, conn: c}, nil
	}))
	s.Domain = "localhost"
	s.ReadTimeout = 30 * time.Second
	s.WriteTimeout = 30 * time.Second
	s.MaxMessageBytes = 10 << 20
	s.ErrorLog = log.New(io.Discard, "", 0)
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	switch ts.mode {
	case srvStartTLS:
		s.TLSConfig = tc
	case srvImplicit:
		s.TLSConfig = tc
		ln = tls.NewListener(ln, tc)
	case srvPlain:
		s.AllowInsecureAuth = true
	}
	ts.mu.Lock()
	ts.srv, ts.ln = s, ln
	ts.mu.Unlock()
	go func() { _ = s.Serve(ln) }()
}

// down stops the server: connections are refused until up.
func (ts *testServer) down() {
	ts.mu.Lock()
	s, ln := ts.srv, ts.ln
	ts.srv, ts.ln = nil, nil
	ts.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	if s != nil {
		_ = s.Close()
	}
}

// up listens again on the same port.
func (ts *testServer) up() {
	ts.t.Helper()
	var ln net.Listener
	var err error
	for range 50 { // the port is free at once on Linux; retry just in case
		if ln, err = net.Listen("tcp", ts.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		ts.t.Fatalf("re-listening on %s: %v", ts.addr, err)
	}
	ts.serve(ln)
}

// refuseRcpt makes the server answer RCPT TO:<addr> with code.
func (ts *testServer) refuseRcpt(addr string, code int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.refuse[addr] = &smtp.SMTPError{Code: code, EnhancedCode: smtp.EnhancedCode{code / 100, 1, 1}, Message: "mailbox unavailable"}
}

// messages returns what has been received so far.
func (ts *testServer) messages() []received {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]received(nil), ts.msgs...)
}

// counts returns the number of SMTP connections that said EHLO and of
// successful AUTHs.
func (ts *testServer) counts() (sessions, auths int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.conns), ts.auths
}

// testSession is one client connection.
type testSession struct {
	ts     *testServer
	conn   *smtp.Conn
	authed string
	from   string
	rcpts  []string
}

func (s *testSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *testSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, username, password string) error {
		if username != testUser || password != testPass {
			// A careless server that echoes what it got: the client must
			// still never show the password.
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8},
				Message: "authentication failed for " + username + " with password " + password}
		}
		s.authed = username
		s.ts.mu.Lock()
		s.ts.auths++
		s.ts.mu.Unlock()
		return nil
	}), nil
}

func (s *testSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.authed == "" {
		return smtp.ErrAuthRequired
	}
	s.from = from
	return nil
}

func (s *testSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.ts.mu.Lock()
	refusal := s.ts.refuse[to]
	s.ts.mu.Unlock()
	if refusal != nil {
		return refusal
	}
	s.rcpts = append(s.rcpts, to)
	return nil
}

func (s *testSession) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, isTLS := s.conn.TLSConnectionState()
	s.ts.mu.Lock()
	s.ts.msgs = append(s.ts.msgs, received{from: s.from, rcpts: s.rcpts, data: data, authUser: s.authed, tls: isTLS})
	s.ts.mu.Unlock()
	select {
	case s.ts.notify <- struct{}{}:
	default:
	}
	return nil
}

func (s *testSession) Reset() { s.from, s.rcpts = "", nil }

func (s *testSession) Logout() error { return nil }

// parsedMessage is a received message taken apart.
type parsedMessage struct {
	header     mail.Header
	rawHeader  string
	subject    string
	text, html string
	partTypes  []string
}

// parseMessage parses a received message: headers, decoded subject, and
// the text and HTML parts of its multipart/alternative body.
func parseMessage(t *testing.T, data []byte) parsedMessage {
	t.Helper()
	var p parsedMessage
	end := bytes.Index(data, []byte("\r\n\r\n"))
	if end < 0 {
		t.Fatalf("message has no CRLF CRLF between header and body:\n%s", data)
	}
	p.rawHeader = string(data[:end+2])
	m, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("parsing message: %v", err)
	}
	p.header = m.Header
	if p.subject, err = new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject")); err != nil {
		t.Fatalf("decoding subject: %v", err)
	}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type %q: %v", m.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading part: %v", err)
		}
		body, err := io.ReadAll(part) // quoted-printable is decoded by NextPart
		if err != nil {
			t.Fatalf("reading part: %v", err)
		}
		ct := part.Header.Get("Content-Type")
		p.partTypes = append(p.partTypes, ct)
		switch {
		case strings.HasPrefix(ct, "text/plain"):
			p.text = strings.ReplaceAll(string(body), "\r\n", "\n")
		case strings.HasPrefix(ct, "text/html"):
			p.html = strings.ReplaceAll(string(body), "\r\n", "\n")
		}
	}
	return p
}

// itoa is strconv.Itoa, shorter.
func itoa(i int) string { return strconv.Itoa(i) }
