package feedback_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/analysis"
	"github.com/jobsight/jobsight/internal/demo"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/site/advise"
	"github.com/jobsight/jobsight/internal/site/feedback"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/test/stack"
)

// TestStoreSelectsWhatTheAdviceCompares checks, on the real store, that
// the search `jobsight advise` sends (UserFinalJobs with Like: the
// request's name first, else a similar CPU and GPU request, in the states
// that count, the newest advise.fetch of them) gives the advice the
// caller's whole history gives, for requests made from the users' own
// past jobs in a generated half year (names repeated hundreds of times,
// jobs on GPUs and not, failed and short runs, several partitions and
// accounts), and never another user's job.
func TestStoreSelectsWhatTheAdviceCompares(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	es, suffix := stack.TestElasticsearch(t, ctx)
	index := "jobsight-test-like-" + suffix
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{es.URL}, Username: es.User, Password: es.Password, CACertFile: es.CACertFile})
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Truncate(time.Second)
	if v := os.Getenv("JOBSIGHT_LIKE_END"); v != "" { // another generated history
		if end, err = time.Parse(time.RFC3339, v); err != nil {
			t.Fatal(err)
		}
	}
	gen, err := demo.New(demo.Config{Seed: 37, End: end, Span: 200 * 24 * time.Hour, Jobs: 5000, Clusters: []string{"c1"}, Compact: true})
	if err != nil {
		t.Fatal(err)
	}
	var all []jobmodel.Job
	for !gen.Done() {
		all = append(all, gen.Next(1000)...)
	}
	// Users resubmit the same scripts: the generator's names ("train-484")
	// lose their number, so that a name recurs hundreds of times, more
	// than one search reads (advise.fetch).
	for i := range all {
		if k := strings.LastIndexByte(all[i].Name, '-'); k > 0 {
			all[i].Name = all[i].Name[:k]
		}
	}
	// Two of the users with the most jobs: their jobs of the last 120
	// days and those around the lookback's start (180 days); of the
	// others, a couple of hundred (users whose history must never show).
	byUID := map[uint32][]jobmodel.Job{}
	for _, j := range all {
		if j.UID != nil && j.Final {
			byUID[*j.UID] = append(byUID[*j.UID], j)
		}
	}
	uids := make([]uint32, 0, len(byUID))
	for u := range byUID {
		uids = append(uids, u)
	}
	sort.Slice(uids, func(a, b int) bool {
		if len(byUID[uids[a]]) != len(byUID[uids[b]]) {
			return len(byUID[uids[a]]) > len(byUID[uids[b]])
		}
		return uids[a] < uids[b]
	})
	users := uids[1:3]
	kept := func(j jobmodel.Job) bool {
		age := end.Sub(j.EndTime.Time)
		return age < 120*24*time.Hour || (age > 175*24*time.Hour && age < 185*24*time.Hour)
	}
	var docs []jobmodel.Job
	for _, u := range users {
		byUID[u] = slices.DeleteFunc(byUID[u], func(j jobmodel.Job) bool { return !kept(j) })
		docs = append(docs, byUID[u]...)
	}
	others := 0
	for _, u := range append(uids[:1:1], uids[3:]...) {
		for _, j := range byUID[u] {
			if others < 200 {
				docs = append(docs, j)
				others++
			}
		}
	}
	st, err := demo.IndexJobs(ctx, c, index, emptyGenerator(t, end), docs, demo.IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := demo.WaitCount(ctx, c, index, len(docs), 4*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("indexed %d finished jobs (%d of users %v, %d of others): %+v", len(docs), len(docs)-others, users, others, st)

	acfg := analysis.Default()
	store := &feedback.Store{ES: c, Indices: feedback.Indices{Job: index}, Cluster: "c1"}
	// Two passes: with the default fetch, and with the least the command
	// reads (max_jobs + min_jobs - 1: the jobs of the request's name, too
	// few to advise on, may take min_jobs - 1 places before the similar
	// ones), where one search reads fewer documents than many requests
	// have comparable jobs (only the store's order then gets it right).
	d := advise.Default()
	for _, fetch := range []int{d.Fetch, d.MaxJobs + d.MinJobs - 1} {
		cfg := advise.Default()
		cfg.Fetch = fetch
		since := end.Add(-cfg.Lookback)
		checked, named, similarBasis, advised, bounded := 0, 0, 0, 0, 0
		for _, u := range users {
			mine := byUID[u]
			// Requests as the user would make them again: the request of
			// every 7th of their jobs, and the same without a name (only
			// the request then compares).
			for i := 0; i < len(mine); i += 7 {
				req, ok := requestOf(mine[i])
				if !ok {
					continue
				}
				for _, r := range []advise.Request{req, withName(req, "")} {
					want := fromWholeHistory(r, byUID[u], since, cfg, acfg)
					q := feedback.UserJobs{UID: u, Account: r.Account, Partitions: r.Partitions(), Since: since, Size: cfg.Reads(),
						Like: feedback.LikeRequest(r, cfg)}
					got, err := store.UserFinalJobs(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					var past []advise.Past
					for _, d := range got {
						if d.UID == nil || *d.UID != u {
							t.Fatalf("uid %d's search answered %s of uid %v", u, d.DocID, d.UID)
						}
						past = append(past, advise.PastOf(d, acfg))
					}
					switch {
					case len(got) > cfg.Fetch:
						t.Errorf("%d documents read, more than fetch (%d)", len(got), cfg.Fetch)
					case len(got) == cfg.Fetch:
						bounded++
					}
					a := advise.Advise(r, past, cfg)
					wb, _ := json.Marshal(want)
					gb, _ := json.Marshal(a)
					if string(wb) != string(gb) {
						t.Errorf("fetch %d, uid %d, request %+v: from the store's %d jobs\n  %s\nfrom the whole history\n  %s", fetch, u, r, len(got), gb, wb)
					}
					checked++
					switch a.Basis {
					case "name":
						named++
					case "request":
						similarBasis++
					}
					if len(a.Changes) > 0 {
						advised++
					}
				}
			}
		}
		t.Logf("fetch %d: %d requests (%d with more comparable jobs than one search reads): %d advised on the same name, %d on similar requests, %d with changes; the same advice as from the whole history",
			fetch, checked, bounded, named, similarBasis, advised)
		if named == 0 || similarBasis == 0 || advised == 0 || (fetch < d.Fetch && bounded == 0) {
			t.Errorf("fetch %d: the generated history does not exercise both bases, changes and the bound: %d named, %d similar, %d advised, %d bounded", fetch, named, similarBasis, advised, bounded)
		}
	}
}

// requestOf is job's request as its user would make it again.
func requestOf(j jobmodel.Job) (advise.Request, bool) {
	if j.Requested.CPUs == nil {
		return advise.Request{}, false
	}
	req := advise.Request{Account: j.Account, Partition: j.Partition, Name: j.Name, CPUsPerTask: *j.Requested.CPUs, Nodes: 1}
	if n := j.Requested.Nodes; n != nil {
		req.Nodes = *n
	}
	if m := j.Requested.MemoryPerNodeBytes; m != nil {
		req.MemPerNodeBytes = *m
	}
	if g := j.Requested.GPUs; g != nil {
		req.GPUs = *g
	}
	if l := j.TimeLimitSeconds; l != nil {
		req.TimeLimitSeconds = *l
	}
	return req, true
}

func withName(r advise.Request, name string) advise.Request {
	r.Name = name
	return r
}

// fromWholeHistory is the advice from every finished job of uid in the
// request's account and partition that ended since since, as if the
// command had read them all.
func fromWholeHistory(r advise.Request, jobs []jobmodel.Job, since time.Time, cfg advise.Config, acfg analysis.Config) advise.Advice {
	var past []advise.Past
	for _, j := range jobs {
		if !j.Final || j.EndTime == nil || j.EndTime.Before(since) || j.Account != r.Account || !slices.Contains(r.Partitions(), j.Partition) {
			continue
		}
		past = append(past, advise.PastOf(j, acfg))
	}
	return advise.Advise(r, past, cfg)
}

func emptyGenerator(t *testing.T, end time.Time) *demo.Generator {
	g, err := demo.New(demo.Config{End: end, Clusters: []string{"c1"}})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// The command caches a history under the Like's key: the same request
// must give the same key in every process (no pointer in it), and a
// request that selects other jobs another key.
func TestLikeKeyIsItsConditions(t *testing.T) {
	cfg := advise.Default()
	req := advise.Request{Account: "a", Partition: "p", Name: "train", CPUsPerTask: 8, MemPerNodeBytes: 16 << 30, GPUs: 2}
	same := req
	k := feedback.LikeRequest(req, cfg).Key()
	if k2 := feedback.LikeRequest(same, cfg).Key(); k2 != k {
		t.Errorf("the same request, two keys:\n%s\n%s", k, k2)
	}
	for what, r := range map[string]advise.Request{
		"name": withName(req, "eval"), "cpus": func() advise.Request { r := req; r.CPUsPerTask = 32; return r }(),
		"memory": func() advise.Request { r := req; r.MemPerNodeBytes = 64 << 30; return r }(),
		"gpus":   func() advise.Request { r := req; r.GPUs = 0; return r }(),
		"nodes":  func() advise.Request { r := req; r.Nodes = 2; return r }(),
	} {
		if feedback.LikeRequest(r, cfg).Key() == k {
			t.Errorf("another %s, the same key %s", what, k)
		}
	}
}
