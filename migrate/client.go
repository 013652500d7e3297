package migrate

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Auth is how a client reaches one side: HTTP basic auth when User is set,
// a bearer token when BearerToken is, and for https the CA file to trust
// (the system's roots without one) or no verification at all.
type Auth struct {
	User, Password     string
	BearerToken        string
	CAFile             string
	InsecureSkipVerify bool
}

// Client sends requests to one side, retrying what a retry can help.
// Safe for concurrent use.
type Client struct {
	HTTP       *http.Client // with its timeout
	Auth       Auth
	Retries    int           // retries after the first attempt
	MinBackoff time.Duration // first wait; doubled each retry
	MaxBackoff time.Duration // longest wait, Retry-After included

	sleep func(context.Context, time.Duration) error // tests replace it
}

// NewClient returns a client with a per-request timeout. Only a CA file
// that cannot be read or holds no certificate is an error.
func NewClient(auth Auth, timeout time.Duration, retries int) (*Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if auth.CAFile != "" || auth.InsecureSkipVerify {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: auth.InsecureSkipVerify} //nolint:gosec // asked for by flag
		if auth.CAFile != "" {
			b, err := os.ReadFile(auth.CAFile)
			if err != nil {
				return nil, fmt.Errorf("CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(b) {
				return nil, fmt.Errorf("CA file %s holds no PEM certificate", auth.CAFile)
			}
			tr.TLSClientConfig.RootCAs = pool
		}
	}
	return &Client{
		HTTP:       &http.Client{Timeout: timeout, Transport: tr},
		Auth:       auth,
		Retries:    retries,
		MinBackoff: 500 * time.Millisecond,
		MaxBackoff: time.Minute,
	}, nil
}

// StatusError is a response whose status a retry cannot help (a 4xx other
// than 429), or the last one of a request that ran out of retries.
type StatusError struct {
	Method, URL string
	Code        int
	Body        string // the first few hundred bytes
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.URL, e.Code, http.StatusText(e.Code), e.Body)
}

const errBodyBytes = 400

// Do sends the request built from method, url, header and body, and hands a
// 2xx response to read (its body is closed afterwards). 429, 5xx and
// transport errors are retried with exponential backoff, waiting at least
// what Retry-After says; other statuses fail at once with a *StatusError.
// An error returned by read is returned as it is, without retry.
func (c *Client) Do(ctx context.Context, method, url string, header http.Header, body []byte, read func(*http.Response) error) error {
	backoff := c.MinBackoff
	for attempt := 0; ; attempt++ {
		resp, err := c.send(ctx, method, url, header, body)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			err = fmt.Errorf("%s %s: %w", method, url, err)
		case resp.StatusCode/100 == 2:
			defer resp.Body.Close()
			return read(resp)
		default:
			b, _ := io.ReadAll(io.LimitReader(resp.Body, errBodyBytes))
			resp.Body.Close()
			err = &StatusError{Method: method, URL: url, Code: resp.StatusCode, Body: strings.TrimSpace(string(b))}
			if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode/100 != 5 {
				return err
			}
			wait = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
		if attempt >= c.Retries {
			return fmt.Errorf("after %d attempts: %w", attempt+1, err)
		}
		wait = max(wait, backoff)
		wait = min(wait, c.MaxBackoff)
		backoff = min(2*backoff, c.MaxBackoff)
		sleep := c.sleep
		if sleep == nil {
			sleep = sleepCtx
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

func (c *Client) send(ctx context.Context, method, url string, header http.Header, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	switch {
	case c.Auth.BearerToken != "":
		req.Header.Set("Authorization", "Bearer "+c.Auth.BearerToken)
	case c.Auth.User != "":
		req.SetBasicAuth(c.Auth.User, c.Auth.Password)
	}
	return c.HTTP.Do(req)
}

// retryAfter reads a Retry-After header: seconds or an HTTP date. Zero when
// absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// IsClientError tells whether err is a 4xx that a retry cannot help.
func IsClientError(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code/100 == 4 && se.Code != http.StatusTooManyRequests
}
