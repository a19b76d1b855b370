package feedback

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// ExportColumns are the CSV export's columns, in order.
var ExportColumns = []string{"cluster", "job_id", "user", "account", "partition", "state", "end_time", "elapsed_seconds",
	"kind", "class", "score", "gpus", "effective_gpus", "gpu_utilization", "cpu_efficiency", "memory_efficiency",
	"walltime_efficiency", "gpu_hours", "gpu_hours_wasted", "core_hours", "core_hours_wasted", "causes"}

// WriteCSV writes one line per analysed job: efficiency scores and waste,
// for policy use. Values a job lacks are empty, never 0. Text a user chose
// (names) cannot become a spreadsheet formula.
func WriteCSV(w io.Writer, rs []jobmodel.Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(ExportColumns); err != nil {
		return err
	}
	for _, r := range rs {
		a := r.Analysis
		f := a.Figures
		var causes []string
		for _, c := range a.Causes {
			causes = append(causes, c.ID)
		}
		end := ""
		if r.EndTime != nil {
			end = r.EndTime.UTC().Format("2006-01-02T15:04:05Z")
		}
		row := []string{r.Cluster, r.JobID, r.User, r.Account, r.Partition, r.State, end, num(r.ElapsedSeconds),
			a.Kind, a.Class, num(a.Score), inum(f.GPUs), inum(f.EffectiveGPUs), num(f.GPUUtilization), num(f.CPUEfficiency),
			num(f.MemoryEfficiency), num(f.WalltimeEfficiency), num(f.GPUHours), num(f.GPUHoursWasted), num(f.CoreHours),
			num(f.CoreHoursWasted), strings.Join(causes, ";")}
		for i := range row {
			row[i] = defuse(row[i])
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes the results as a JSON array, one object per job, as
// stored in the results index.
func WriteJSON(w io.Writer, rs []jobmodel.Result) error {
	if rs == nil {
		rs = []jobmodel.Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rs)
}

func num(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

func inum(v *int64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(*v, 10)
}

// defuse keeps a spreadsheet from reading a value as a formula.
func defuse(s string) string {
	if s != "" && strings.ContainsRune("=+@\t\r", rune(s[0])) || strings.HasPrefix(s, "-") && !isNumber(s) {
		return "'" + s
	}
	return s
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}
