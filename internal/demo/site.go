package demo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Partition is one Slurm partition of the generated site: its nodes (all
// alike) and the share of the jobs submitted to it.
type Partition struct {
	Cluster      string
	Name         string
	Nodes        []string
	CoresPerNode int64
	MemPerNode   int64 // bytes
	GPUsPerNode  int64
	GPUModel     string
	GPUMemory    int64 // bytes per GPU
	// MaxTime is the partition's longest time limit (seconds).
	MaxTime int64
	// weight is the partition's share of submissions.
	weight float64
}

// Site is the generated clusters, partitions, accounts and users.
type Site struct {
	Clusters   []string
	Partitions []Partition
	Accounts   []string
	Users      []User
	// Location is the site's time zone.
	Location *time.Location
	// userCum is the users' cumulative activity (Zipf-like), for picking
	// the submitter of a job.
	userCum []float64
}

// User is a generated user: a stable login, uid, accounts and habits.
type User struct {
	Name     string
	UID      uint32
	GID      uint32
	Accounts []string // the first is the user's main account
	// gpuShare is how often the user runs GPU jobs; skill shifts the
	// user's jobs' efficiency (some users waste much more than others).
	gpuShare float64
	skill    float64
}

// Sizes of the generated site.
const (
	numUsers    = 150
	numAccounts = 30
)

var accountNames = []string{
	"astro", "bioinf", "chem-md", "climate", "cosmo", "cfd", "dl-vision", "dl-nlp", "econ", "epidem",
	"fusion", "genomics", "geo", "hep", "imaging", "lattice", "materials", "math-opt", "neuro", "ocean",
	"pharma", "photonics", "plasma", "quantum", "robotics", "seismo", "speech", "statphys", "struct-bio", "turbulence",
}

var surnames = []string{
	"bauer", "becker", "braun", "fischer", "hartmann", "hoffmann", "koch", "krause", "lange", "lehmann",
	"meyer", "mueller", "neumann", "richter", "schmidt", "schmitt", "schneider", "schulz", "schwarz", "wagner",
	"weber", "werner", "wolf", "zimmermann", "rossi", "dubois", "novak", "silva", "kowalski", "jansen",
}

// newSite builds the site of clusters (one or two names). The first
// cluster has the partitions cpu, bigmem, debug and gpu (4 A100 per node);
// a second has gpu-h100 (8 H100 per node); with one cluster it has them
// all.
func newSite(clusters []string, r *rand.Rand) *Site {
	s := &Site{Clusters: clusters}
	second := clusters[0]
	if len(clusters) > 1 {
		second = clusters[1]
	}
	nodes := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%03d", prefix, i+1)
		}
		return out
	}
	const gib = int64(1) << 30
	s.Partitions = []Partition{
		{Cluster: clusters[0], Name: "cpu", Nodes: nodes("c", 120), CoresPerNode: 64, MemPerNode: 256 * gib, MaxTime: 72 * 3600, weight: 46},
		{Cluster: clusters[0], Name: "bigmem", Nodes: nodes("m", 8), CoresPerNode: 64, MemPerNode: 2048 * gib, MaxTime: 72 * 3600, weight: 5},
		{Cluster: clusters[0], Name: "debug", Nodes: nodes("d", 4), CoresPerNode: 64, MemPerNode: 256 * gib, MaxTime: 3600, weight: 11},
		{Cluster: clusters[0], Name: "gpu", Nodes: nodes("g", 24), CoresPerNode: 64, MemPerNode: 512 * gib, GPUsPerNode: 4,
			GPUModel: "NVIDIA A100-SXM4-80GB", GPUMemory: 80 * gib, MaxTime: 48 * 3600, weight: 28},
		{Cluster: second, Name: "gpu-h100", Nodes: nodes("h", 16), CoresPerNode: 96, MemPerNode: 1024 * gib, GPUsPerNode: 8,
			GPUModel: "NVIDIA H100 80GB HBM3", GPUMemory: 80 * gib, MaxTime: 48 * 3600, weight: 10},
	}
	s.Accounts = accountNames[:numAccounts]
	// Account sizes are skewed too: account k gets users in proportion
	// to 1/(k+1)^0.7, every account at least one.
	s.Users = make([]User, numUsers)
	acctOf := make([]int, numUsers)
	for i := range acctOf {
		if i < numAccounts {
			acctOf[i] = i
			continue
		}
		acctOf[i] = zipfPick(r, numAccounts, 0.7)
	}
	var cum float64
	for i := range s.Users {
		u := &s.Users[i]
		// An initial and a surname; unique, since for one surname
		// (i%30) the five values of i/30 give five initials.
		u.Name = string(rune('a'+(i%30*7+i/30)%26)) + surnames[i%30]
		u.UID = uint32(20000 + i)         // #nosec G115 -- i < numUsers
		u.GID = uint32(30000 + acctOf[i]) // #nosec G115 -- < numAccounts
		u.Accounts = []string{s.Accounts[acctOf[i]]}
		if r.IntN(5) == 0 {
			if other := r.IntN(numAccounts); other != acctOf[i] {
				u.Accounts = append(u.Accounts, s.Accounts[other])
			}
		}
		// Accounts whose names say deep learning run mostly GPU jobs.
		switch acct := u.Accounts[0]; {
		case acct == "dl-vision" || acct == "dl-nlp" || acct == "speech" || acct == "robotics" || acct == "imaging":
			u.gpuShare = 0.85
		case r.IntN(5) < 2:
			u.gpuShare = 0.3 + 0.4*r.Float64()
		default:
			u.gpuShare = 0.08 * r.Float64()
		}
		u.skill = r.NormFloat64() * 0.18
		// Activity: Zipf-like over the users' ranks (user 0 the busiest).
		cum += 1 / math.Pow(float64(i+1), 1.05)
		s.userCum = append(s.userCum, cum)
	}
	return s
}

// zipfPick picks 0..n-1 with weight 1/(k+1)^s.
func zipfPick(r *rand.Rand, n int, s float64) int {
	var total float64
	for k := 0; k < n; k++ {
		total += 1 / math.Pow(float64(k+1), s)
	}
	x := r.Float64() * total
	for k := 0; k < n; k++ {
		x -= 1 / math.Pow(float64(k+1), s)
		if x < 0 {
			return k
		}
	}
	return n - 1
}

// pickUser picks a submitter by activity.
func (s *Site) pickUser(r *rand.Rand) *User {
	x := r.Float64() * s.userCum[len(s.userCum)-1]
	lo, hi := 0, len(s.userCum)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if s.userCum[mid] > x {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return &s.Users[lo]
}

// partition returns the named partition (nil if none).
func (s *Site) partition(name string) *Partition {
	for i := range s.Partitions {
		if s.Partitions[i].Name == name {
			return &s.Partitions[i]
		}
	}
	return nil
}
