package notify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jobsight/jobsight/internal/config"
)

// Stages of a message's SMTP transaction, for classifying failures.
const (
	stageMail = "MAIL FROM"
	stageRcpt = "RCPT TO"
	stageData = "DATA"
)

// errNoStartTLS: the server does not offer STARTTLS while it is required.
var errNoStartTLS = errors.New("server does not offer STARTTLS; refusing to send in plain text (tls: starttls)")

// smtpCode returns the SMTP reply code carried by err, 0 when err is not a
// server reply (a network or local error).
func smtpCode(err error) int {
	var tp *textproto.Error
	if errors.As(err, &tp) {
		return tp.Code
	}
	return 0
}

// isPermanent reports whether err is a 5xx server reply.
func isPermanent(err error) bool {
	c := smtpCode(err)
	return c >= 500 && c < 600
}

// failureReason is the metric label for err.
func failureReason(err error) string {
	if isPermanent(err) {
		return reasonPermanent
	}
	return reasonTemporary
}

// readPassword reads the password file: its first line, without the line
// ending. Errors name the file, never its contents.
func readPassword(path string) (string, error) {
	data, err := config.ReadSecret(optionPrefix+"smtp.password_file", path)
	if err != nil {
		return "", err
	}
	pw, _, _ := strings.Cut(data, "\n")
	pw = strings.TrimSuffix(pw, "\r")
	if pw == "" {
		return "", fmt.Errorf("%ssmtp.password_file: %s: empty password", optionPrefix, path)
	}
	return pw, nil
}

// tlsConfig is the client TLS configuration: the configured CAs (or the
// system's), the host's name checked, TLS 1.2 at least.
func tlsConfig(s *SMTPConfig) (*tls.Config, error) {
	c := &tls.Config{ServerName: s.Host, MinVersion: tls.VersionTLS12}
	if s.CAFile != "" {
		pem, err := readLimited(s.CAFile, 4<<20)
		if err != nil {
			return nil, fmt.Errorf("%ssmtp.ca_file: %w", optionPrefix, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%ssmtp.ca_file: %s: no PEM certificate found", optionPrefix, s.CAFile)
		}
		c.RootCAs = pool
	}
	return c, nil
}

// plainAuth is SASL PLAIN. It refuses to send credentials over plain text
// unless allowed (tls: none, which is loopback only), and only to a server
// that offers PLAIN.
type plainAuth struct {
	user, pass      string
	plainTextIsSafe bool
}

// Start implements smtp.Auth.
func (a plainAuth) Start(si *smtp.ServerInfo) (string, []byte, error) {
	if !si.TLS && !a.plainTextIsSafe {
		return "", nil, errors.New("refusing to send credentials over an unencrypted connection")
	}
	offered := false
	for _, m := range si.Auth {
		offered = offered || strings.EqualFold(m, "PLAIN")
	}
	if !offered {
		return "", nil, fmt.Errorf("server does not offer AUTH PLAIN (offers %q)", strings.Join(si.Auth, " "))
	}
	return "PLAIN", []byte("\x00" + a.user + "\x00" + a.pass), nil
}

// Next implements smtp.Auth; PLAIN has no challenges.
func (a plainAuth) Next(_ []byte, more bool) ([]byte, error) {
	if more {
		return nil, errors.New("unexpected challenge from server during AUTH PLAIN")
	}
	return nil, nil
}

// redactedError hides secrets in an error's text, as a last line of
// defence: no code path here puts the password in an error.
type redactedError struct {
	err     error
	secrets []string
}

func (e *redactedError) Error() string {
	s := e.err.Error()
	for _, sec := range e.secrets {
		s = strings.ReplaceAll(s, sec, "[redacted]")
	}
	return s
}

func (e *redactedError) Unwrap() error { return e.err }

// redact wraps err so that its text never shows the password (or the
// AUTH PLAIN token made from it).
func redact(err error, user, pass string) error {
	if err == nil || pass == "" {
		return err
	}
	token := base64.StdEncoding.EncodeToString([]byte("\x00" + user + "\x00" + pass))
	return &redactedError{err: err, secrets: []string{pass, token}}
}

// session is one SMTP connection, set up (TLS, AUTH) and ready for
// messages.
type session struct {
	c       *smtp.Client
	conn    net.Conn
	timeout time.Duration
	stop    func() bool
}

// dial connects, greets, secures and authenticates as configured. The
// connection is closed when ctx is done.
func dial(ctx context.Context, s *SMTPConfig, helo string) (_ *session, err error) {
	var pass string
	if s.Username != "" {
		if pass, err = readPassword(s.PasswordFile); err != nil {
			return nil, err
		}
		defer func() { err = redact(err, s.Username, pass) }()
	}
	var tc *tls.Config
	if s.TLS != TLSNone {
		if tc, err = tlsConfig(s); err != nil {
			return nil, err
		}
	}
	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.port()))
	nd := &net.Dialer{Timeout: s.ConnectTimeout}
	var conn net.Conn
	if s.TLS == TLSImplicit {
		conn, err = (&tls.Dialer{NetDialer: nd, Config: tc}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = nd.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	if s.TLS == TLSNone {
		if ta, ok := conn.RemoteAddr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
			conn.Close()
			return nil, fmt.Errorf("connecting to %s: tls %q is only allowed to loopback, but %s is not", addr, TLSNone, conn.RemoteAddr())
		}
	}
	sess := &session{conn: conn, timeout: s.SendTimeout, stop: context.AfterFunc(ctx, func() { conn.Close() })}
	defer func() {
		if err != nil {
			sess.close()
			if ctx.Err() != nil {
				err = fmt.Errorf("%w (%w)", ctx.Err(), err)
			}
		}
	}()
	sess.deadline()
	if sess.c, err = smtp.NewClient(conn, s.Host); err != nil {
		return sess, fmt.Errorf("greeting from %s: %w", addr, err)
	}
	if err = sess.c.Hello(helo); err != nil {
		return sess, fmt.Errorf("EHLO to %s: %w", addr, err)
	}
	if s.TLS == TLSStartTLS {
		if ok, _ := sess.c.Extension("STARTTLS"); !ok {
			return sess, fmt.Errorf("%s: %w", addr, errNoStartTLS)
		}
		if err = sess.c.StartTLS(tc); err != nil {
			return sess, fmt.Errorf("STARTTLS with %s: %w", addr, err)
		}
	}
	if s.Username != "" {
		if err = sess.c.Auth(plainAuth{user: s.Username, pass: pass, plainTextIsSafe: s.TLS == TLSNone}); err != nil {
			return sess, fmt.Errorf("AUTH as %q at %s: %w", s.Username, addr, err)
		}
	}
	return sess, nil
}

// deadline gives the next exchange the configured time.
func (s *session) deadline() {
	_ = s.conn.SetDeadline(time.Now().Add(s.timeout))
}

// send runs one message's transaction. On failure it returns the stage
// that failed.
func (s *session) send(from, to string, msg []byte) (string, error) {
	s.deadline()
	if err := s.c.Mail(from); err != nil {
		return stageMail, fmt.Errorf("%s: %w", stageMail, err)
	}
	if err := s.c.Rcpt(to); err != nil {
		return stageRcpt, fmt.Errorf("%s: %w", stageRcpt, err)
	}
	w, err := s.c.Data()
	if err != nil {
		return stageData, fmt.Errorf("%s: %w", stageData, err)
	}
	if _, err := w.Write(msg); err != nil {
		w.Close()
		return stageData, fmt.Errorf("%s: %w", stageData, err)
	}
	if err := w.Close(); err != nil {
		return stageData, fmt.Errorf("%s: %w", stageData, err)
	}
	return "", nil
}

// reset aborts a failed transaction so that the next can start.
func (s *session) reset() error {
	s.deadline()
	if err := s.c.Reset(); err != nil {
		return fmt.Errorf("RSET: %w", err)
	}
	return nil
}

// quit ends the session politely and closes the connection.
func (s *session) quit() {
	s.deadline()
	if s.c != nil {
		_ = s.c.Quit()
	}
	s.close()
}

// close closes the connection.
func (s *session) close() {
	s.stop()
	if s.c != nil {
		_ = s.c.Close()
	}
	_ = s.conn.Close()
}

// defaultHelo is the default EHLO name: this host's name when usable.
func defaultHelo() string {
	if h, err := os.Hostname(); err == nil && validHost(h) {
		return h
	}
	return "localhost"
}
