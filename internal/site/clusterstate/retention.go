package clusterstate

// retention.go: deleting the monthly job, node and result indices older
// than elasticsearch.retention_months (docs/indices.md).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// MaxRetentionMonths bounds elasticsearch.retention_months (100 years).
const MaxRetentionMonths = 1200

// Retention runs once a day; a failed run is tried again after an hour.
const (
	retentionEvery = 24 * time.Hour
	retentionRetry = time.Hour
)

// checkRetention deletes the expired monthly indices when a day has passed
// since the last run (an hour after a failed one).
func (c *Collector) checkRetention(ctx context.Context, now time.Time) {
	if c.es == nil || c.cfg.Elasticsearch.RetentionMonths <= 0 || (!c.nextRetention.IsZero() && now.Before(c.nextRetention)) {
		return
	}
	if _, err := c.ApplyRetention(ctx, now); err != nil {
		c.nextRetention = now.Add(retentionRetry)
		c.metrics.errors.WithLabelValues("elasticsearch").Inc()
		c.log.Warn("retention: not applied; trying again in an hour", "err", err)
		return
	}
	c.nextRetention = now.Add(retentionEvery)
}

// ApplyRetention deletes the monthly job, node and result indices that
// elasticsearch.retention_months expires at now (jobmodel.ExpiredIndices:
// only names "<base>-YYYY.MM", never the current or the last month, never
// the pre-0.2 single index), logging each. It returns the deleted names;
// an error names what failed, after the rest was tried.
func (c *Collector) ApplyRetention(ctx context.Context, now time.Time) ([]string, error) {
	months := c.cfg.Elasticsearch.RetentionMonths
	if c.es == nil || months <= 0 {
		return nil, nil
	}
	var deleted []string
	var errs []error
	for _, base := range []string{c.cfg.Elasticsearch.JobIndex, c.cfg.Elasticsearch.NodeIndex, c.cfg.Elasticsearch.ResultIndex} {
		names, err := c.es.MonthlyIndices(ctx, base)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing the monthly indices of %s: %w", base, err))
			continue
		}
		for _, name := range jobmodel.ExpiredIndices(base, names, now, months) {
			if err := c.es.DeleteIndex(ctx, base, name); err != nil {
				errs = append(errs, fmt.Errorf("deleting %s: %w", name, err))
				continue
			}
			c.log.Info("retention: deleted an expired monthly index", "index", name, "retention_months", months)
			deleted = append(deleted, name)
		}
	}
	return deleted, errors.Join(errs...)
}
