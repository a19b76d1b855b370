package elasticsearch

// partitions.go: monthly indices ("<base>-YYYY.MM", see jobmodel's
// indices.go). A writer registers each base with its mapping
// (EnsurePartitioned); the client then creates each monthly index, with
// the mapping, before the first write to it, so no index is ever made by
// a write (which, without a template, would map the fields dynamically,
// and which ZincSearch can leave unopenable when writes and searches
// race). The index template (PutTemplate) is the same mapping for
// indices something else creates; putting it needs a cluster privilege
// the agents do not have, so `setup` puts it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
)

// TemplatePriority is the priority of Jobsight's index templates: above
// the built-in templates (100), so a site template matching "*" at the
// default priority does not stop ours from applying.
const TemplatePriority = 200

// partition is a registered base: its mapping, and the monthly indices
// this client has made sure of.
type partition struct {
	mapping []byte
	ready   map[string]bool
}

// EnsurePartitioned registers base as partitioned by month with mapping
// (as EnsureIndex takes it) and makes sure the monthly index of now
// exists with every field of mapping (EnsureIndex: created, or extended
// with the fields it lacks). Later writes to any "<base>-YYYY.MM" make
// sure of that month's index the same way, once per process.
func (c *Client) EnsurePartitioned(ctx context.Context, base string, mapping []byte, now time.Time) error {
	if base == "" {
		return errors.New("elasticsearch: EnsurePartitioned: empty index name")
	}
	if _, _, err := splitMapping(mapping); err != nil {
		return fmt.Errorf("elasticsearch: mapping for index %q: %w", base, err)
	}
	c.mu.Lock()
	if c.partitions == nil {
		c.partitions = map[string]*partition{}
	}
	if p := c.partitions[base]; p == nil || !bytes.Equal(p.mapping, mapping) {
		c.partitions[base] = &partition{mapping: mapping, ready: map[string]bool{}}
	}
	c.mu.Unlock()
	return c.ensureMonthly(ctx, jobmodel.MonthlyIndex(base, now))
}

// ensureMonthly makes sure of index when it is a monthly index of a
// registered base (once per process); other indices are left alone.
func (c *Client) ensureMonthly(ctx context.Context, index string) error {
	c.mu.Lock()
	var p *partition
	for base, q := range c.partitions {
		if _, ok := jobmodel.MonthOfIndex(base, index); ok {
			p = q
			break
		}
	}
	if p == nil || p.ready[index] {
		c.mu.Unlock()
		return nil
	}
	mapping := p.mapping
	c.mu.Unlock()
	if err := c.EnsureIndex(ctx, index, mapping); err != nil {
		return err
	}
	c.mu.Lock()
	p.ready[index] = true
	c.mu.Unlock()
	return nil
}

// ensureFor makes sure of the monthly indices docs go to. It returns the
// error of each index it could not make sure of.
func (c *Client) ensureFor(ctx context.Context, docs []store.Doc) map[string]error {
	var failed map[string]error
	seen := map[string]bool{}
	for _, d := range docs {
		if d.Index == "" || seen[d.Index] {
			continue
		}
		seen[d.Index] = true
		if err := c.ensureMonthly(ctx, d.Index); err != nil {
			if failed == nil {
				failed = map[string]error{}
			}
			failed[d.Index] = err
		}
	}
	return failed
}

// PutTemplate puts the index template "<base>" that gives every index
// matching "<base>-*" mapping (a create-index body or the mappings
// object, as EnsureIndex takes it). It replaces an older version of the
// template; existing indices keep their mapping (EnsureIndex extends
// them). Needs the manage_index_templates cluster privilege.
func (c *Client) PutTemplate(ctx context.Context, base string, mapping []byte) error {
	if base == "" {
		return errors.New("elasticsearch: PutTemplate: empty index name")
	}
	createBody, _, err := splitMapping(mapping)
	if err != nil {
		return fmt.Errorf("elasticsearch: mapping for template %q: %w", base, err)
	}
	var tmpl map[string]json.RawMessage
	if err := json.Unmarshal(createBody, &tmpl); err != nil {
		return fmt.Errorf("elasticsearch: mapping for template %q: %w", base, err)
	}
	body, err := json.Marshal(map[string]any{
		"index_patterns": []string{jobmodel.IndexPattern(base)},
		"priority":       TemplatePriority,
		"template":       tmpl,
	})
	if err != nil {
		return fmt.Errorf("elasticsearch: template %q: %w", base, err)
	}
	if err := c.ready(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.es.Indices.PutIndexTemplate(base, bytes.NewReader(body),
		c.es.Indices.PutIndexTemplate.WithContext(ctx))
	if err != nil {
		return &Error{Op: "put index template", Index: base, Err: err}
	}
	defer drain(res)
	if res.IsError() {
		return responseError("put index template", base, "", res)
	}
	c.log.Info("put index template", "template", base, "pattern", jobmodel.IndexPattern(base))
	return nil
}

// MonthlyIndices returns the monthly indices of base the server holds
// ("<base>-YYYY.MM" only, open or closed), sorted. It reads the indices'
// settings (GET <base>-*/_settings), which needs the view_index_metadata
// privilege on them. Servers that cannot list indices by pattern
// (ZincSearch) answer with an error.
func (c *Client) MonthlyIndices(ctx context.Context, base string) ([]string, error) {
	if base == "" {
		return nil, errors.New("elasticsearch: MonthlyIndices: empty index name")
	}
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	pattern := jobmodel.IndexPattern(base)
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.es.Indices.GetSettings(
		c.es.Indices.GetSettings.WithContext(ctx),
		c.es.Indices.GetSettings.WithIndex(pattern),
		c.es.Indices.GetSettings.WithName("index.creation_date"),
		c.es.Indices.GetSettings.WithAllowNoIndices(true),
		c.es.Indices.GetSettings.WithIgnoreUnavailable(true),
		c.es.Indices.GetSettings.WithExpandWildcards("open,closed"))
	if err != nil {
		return nil, &Error{Op: "list indices", Index: pattern, Err: err}
	}
	defer drain(res)
	if res.IsError() {
		return nil, responseError("list indices", pattern, "", res)
	}
	raw, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return nil, &Error{Op: "list indices", Index: pattern, Status: res.StatusCode, Err: fmt.Errorf("reading answer: %w", err)}
	}
	var answer map[string]json.RawMessage
	if err := json.Unmarshal(raw, &answer); err != nil {
		return nil, &Error{Op: "list indices", Index: pattern, Status: res.StatusCode, Err: fmt.Errorf("decoding answer: %w", err)}
	}
	var out []string
	for name := range answer {
		if _, ok := jobmodel.MonthOfIndex(base, name); ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// DeleteIndex deletes the index name, which must be one monthly index
// ("<base>-YYYY.MM" of base): never a pattern, never another index. It
// needs the delete_index privilege on it. A missing index is not an
// error.
func (c *Client) DeleteIndex(ctx context.Context, base, name string) error {
	if _, ok := jobmodel.MonthOfIndex(base, name); !ok {
		return fmt.Errorf("elasticsearch: refusing to delete %q: not a monthly index of %q", name, base)
	}
	if err := c.ready(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.es.Indices.Delete([]string{name}, c.es.Indices.Delete.WithContext(ctx))
	if err != nil {
		return &Error{Op: "delete index", Index: name, Err: err}
	}
	defer drain(res)
	if res.StatusCode == http.StatusNotFound {
		return nil
	}
	if res.IsError() {
		return responseError("delete index", name, "", res)
	}
	c.mu.Lock()
	for _, p := range c.partitions {
		delete(p.ready, name)
	}
	c.mu.Unlock()
	return nil
}
