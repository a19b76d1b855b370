package alerting

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// Evaluation states of an instance, as Grafana's alert evaluator names
// them.
const (
	StateNormal   = "Normal"
	StateAlerting = "Alerting"
	StateNoData   = "NoData"
)

// Instance is one alert instance of one evaluation: one number of the
// rule's condition.
type Instance struct {
	// Labels are the number's labels, as the query answered them.
	Labels data.Labels
	// Values holds, for each refId with a number of the same labels (the
	// datasource query when it answered numbers, each reduce and
	// threshold), that number; nil is a null. This is what the rule's
	// templates read as {{ $values.<refId> }}.
	Values map[string]*float64
	// State is the evaluation result: Alerting (the condition's number is
	// non-zero, NaN included), Normal (zero) or NoData (null).
	State string
	// Firing: State is Alerting. It is one evaluation: Grafana holds an
	// alert Pending for the rule's For before it fires.
	Firing bool
	// AlertLabels are the labels of the alert Grafana would make:
	// alertname (the title) and grafana_folder first, then the rule's
	// labels, then the instance's; an earlier one wins a clash.
	AlertLabels data.Labels
	// Overridden are instance labels dropped from AlertLabels because
	// the rule (or a reserved label) set the same name to another value.
	Overridden data.Labels
}

// Value returns the number of refID for this instance, and whether it
// exists and is not null.
func (in Instance) Value(refID string) (float64, bool) {
	v, ok := in.Values[refID]
	if !ok || v == nil {
		return 0, false
	}
	return *v, true
}

// Evaluation is one evaluation of a rule.
type Evaluation struct {
	// Instances are the condition's numbers, sorted by their labels.
	Instances []Instance
	// NoData: the condition had no number at all (no frames, an empty
	// answer, or every number dropped by the reduce): Grafana makes one
	// rule-level NoData result, which the rule's noDataState maps.
	NoData bool
	// State is the rule-level outcome of NoData after noDataState
	// (NoData → NoData, OK → Normal, Alerting → Alerting, KeepLast →
	// KeepLast); "" when there are instances.
	State string
}

// Firing returns the instances whose condition held.
func (e Evaluation) Firing() []Instance {
	var out []Instance
	for _, in := range e.Instances {
		if in.Firing {
			out = append(out, in)
		}
	}
	return out
}

// Evaluate runs rule on frames, the answer to the rule's only datasource
// query (refId A for the hogging rules), and returns its alert instances;
// an empty answer gives none (see EvaluateRule for the rule-level NoData).
// An error is what Grafana would turn into an Error evaluation (the rule's
// execErrState), or an expression this emulation does not implement.
func Evaluate(rule Rule, frames data.Frames) ([]Instance, error) {
	var ds []string
	for _, q := range rule.Data {
		if !q.IsExpression() {
			ds = append(ds, q.RefID)
		}
	}
	if len(ds) != 1 {
		return nil, fmt.Errorf("rule %s has %d datasource queries (%s): Evaluate takes the answer of exactly one; use EvaluateRule", rule.UID, len(ds), strings.Join(ds, ", "))
	}
	ev, err := EvaluateRule(rule, map[string]data.Frames{ds[0]: frames})
	return ev.Instances, err
}

// EvaluateRule runs rule's expressions on the answers of its datasource
// queries (refId → frames) as Grafana's server-side expressions do, then
// makes the condition's numbers into instances as Grafana's alert
// evaluator does.
//
// Semantics followed (Grafana 10):
//
//   - Datasource answers become SSE values through the data-plane readers
//     of sdata (numbers or time series with labels, or NoData), or, for an
//     untyped frame, SSE's legacy number table (one numeric field, string
//     fields as labels); other untyped shapes are refused.
//   - reduce (model: expression, reducer, settings.mode,
//     settings.replaceWithValue): a time series becomes one number with
//     its labels. Mode "" or strict reduces every point: sum, mean, min,
//     max, last and median give NaN if any point is null or NaN (last: if
//     the last is), min, max, mean, last and median give NaN on an empty
//     series, sum gives 0 and count the number of points. dropNN first
//     drops null, NaN and ±Inf points; replaceNN replaces them with
//     replaceWithValue. A number input is already reduced: SSE keeps it
//     whatever the reducer (it only warns), but applies the mode: dropNN
//     drops a null, NaN or ±Inf number (that series is gone: no instance),
//     replaceNN replaces it. NoData stays NoData.
//   - threshold (model: expression, conditions[0].evaluator.{type,params}):
//     SSE builds a math expression and evaluates it on each number or
//     point: gt "$B > p", lt "$B < p", within_range "$B > p0 && $B < p1",
//     outside_range "$B < p0 || $B > p1", and, from newer Grafana releases
//     (not Grafana 10), within_range_included ">= && <=" and
//     outside_range_included "<= || >=". Each parameter is printed with
//     %f into the expression, so it counts to 6 decimals. A comparison
//     gives 1 or 0 (NaN compares false); a null gives null. NoData stays
//     NoData.
//   - The condition: each number is an instance, 0 → Normal, null →
//     NoData, anything else (NaN included) → Alerting. No number at all →
//     one rule-level NoData. A time series in the condition, or two
//     numbers with the same labels, fail the whole evaluation.
//
// math, resample, classic_conditions and the threshold's hysteresis
// (unloadEvaluator) are refused with an error naming them.
func EvaluateRule(rule Rule, answers map[string]data.Frames) (Evaluation, error) {
	var ev Evaluation
	e := &evaluator{rule: rule, answers: answers, results: map[string][]value{}, busy: map[string]bool{}}
	// Refuse unknown expressions before running anything.
	for _, q := range rule.Data {
		if !q.IsExpression() {
			continue
		}
		switch t := q.ExpressionType(); t {
		case "reduce", "threshold":
		case "math", "resample", "classic_conditions", "sql":
			return ev, fmt.Errorf("rule %s: expression %s is %s, which this emulation of Grafana's server-side expressions does not implement (only reduce and threshold)", rule.UID, q.RefID, t)
		default:
			return ev, fmt.Errorf("rule %s: expression %s has unknown type %q (model.type)", rule.UID, q.RefID, t)
		}
	}
	for ref := range answers {
		if q, ok := rule.Query(ref); !ok || q.IsExpression() {
			return ev, fmt.Errorf("rule %s: an answer is given for %s, which is not one of its datasource queries", rule.UID, ref)
		}
	}
	cond, err := e.result(rule.Condition)
	if err != nil {
		return ev, err
	}

	var nums []value
	for _, v := range cond {
		switch v.kind {
		case kindSeries:
			return ev, fmt.Errorf("rule %s: invalid format of evaluation results for condition %s: it is time series data (%q {%s}); only reduced data can be alerted on (add a reduce)", rule.UID, rule.Condition, v.name, v.labels)
		case kindNumber:
			nums = append(nums, v)
		}
	}
	if len(nums) == 0 {
		if len(cond) > 0 && len(cond) != countKind(cond, kindNoData) {
			return ev, fmt.Errorf("rule %s: condition %s gave no numbers", rule.UID, rule.Condition)
		}
		ev.NoData = true
		ev.State = noDataOutcome(rule.NoDataState)
		return ev, nil
	}
	if countKind(cond, kindNoData) > 0 {
		// Grafana makes an unlabelled NoData result beside the numbers;
		// no single query of the chains emulated here can give both.
		return ev, fmt.Errorf("rule %s: condition %s mixes numbers and NoData, which this emulation does not model", rule.UID, rule.Condition)
	}

	seen := map[data.Fingerprint]int{}
	for i, v := range nums {
		fp := v.labels.Fingerprint()
		if j, dup := seen[fp]; dup && nums[j].labels.Equals(v.labels) {
			return Evaluation{}, fmt.Errorf("rule %s: frame cannot uniquely be identified by its labels: has duplicate results with labels {%s}: Grafana fails the whole evaluation (execErrState %s)", rule.UID, v.labels, rule.ExecErrState)
		}
		seen[fp] = i
		in := Instance{Labels: v.labels.Copy(), Values: map[string]*float64{}}
		switch {
		case v.num == nil:
			in.State = StateNoData
		case *v.num == 0:
			in.State = StateNormal
		default:
			in.State = StateAlerting
		}
		in.Firing = in.State == StateAlerting
		for _, q := range rule.Data {
			for _, rv := range e.results[q.RefID] {
				if rv.kind == kindNumber && rv.labels.Equals(v.labels) {
					in.Values[q.RefID] = copyNum(rv.num)
					break
				}
			}
		}
		in.AlertLabels, in.Overridden = alertLabels(rule, in.Labels)
		ev.Instances = append(ev.Instances, in)
	}
	sort.SliceStable(ev.Instances, func(i, j int) bool {
		return ev.Instances[i].Labels.String() < ev.Instances[j].Labels.String()
	})
	return ev, nil
}

func noDataOutcome(state string) string {
	switch state {
	case "OK":
		return StateNormal
	case "":
		return StateNoData
	default:
		return state
	}
}

// alertLabels merges labels as Grafana's state manager does: reserved
// labels, then the rule's, then the instance's; the first one set wins.
func alertLabels(rule Rule, inst data.Labels) (data.Labels, data.Labels) {
	out := data.Labels{"alertname": rule.Title, "grafana_folder": rule.Folder}
	for k, v := range rule.Labels {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	var dropped data.Labels
	for k, v := range inst {
		if cur, ok := out[k]; ok {
			if cur != v {
				if dropped == nil {
					dropped = data.Labels{}
				}
				dropped[k] = v
			}
			continue
		}
		out[k] = v
	}
	return out, dropped
}

type evaluator struct {
	rule    Rule
	answers map[string]data.Frames
	results map[string][]value
	busy    map[string]bool
}

// result evaluates refID (and what it reads) once.
func (e *evaluator) result(refID string) ([]value, error) {
	if r, ok := e.results[refID]; ok {
		return r, nil
	}
	if e.busy[refID] {
		return nil, fmt.Errorf("rule %s: expressions loop through %s", e.rule.UID, refID)
	}
	e.busy[refID] = true
	q, ok := e.rule.Query(refID)
	if !ok {
		return nil, fmt.Errorf("rule %s: refId %s is read but not in data", e.rule.UID, refID)
	}
	var out []value
	var err error
	if !q.IsExpression() {
		frames, ok := e.answers[refID]
		if !ok {
			return nil, fmt.Errorf("rule %s: no answer given for datasource query %s", e.rule.UID, refID)
		}
		out, _, err = readFrames(frames)
		if err != nil {
			return nil, fmt.Errorf("rule %s: query %s: %w", e.rule.UID, refID, err)
		}
	} else {
		in := q.ExpressionInput()
		if in == "" {
			return nil, fmt.Errorf("rule %s: %s expression %s has no input (model.expression)", e.rule.UID, q.ExpressionType(), refID)
		}
		vals, err := e.result(in)
		if err != nil {
			return nil, err
		}
		switch q.ExpressionType() {
		case "reduce":
			out, err = reduce(q, vals)
		case "threshold":
			out, err = threshold(q, vals)
		}
		if err != nil {
			return nil, fmt.Errorf("rule %s: %s expression %s: %w", e.rule.UID, q.ExpressionType(), refID, err)
		}
	}
	e.results[refID] = out
	return out, nil
}

// mapper is a reduce mode: it maps one input, nil meaning "drop".
type mapper func(*float64) *float64

func nonNumber(v *float64) bool { return v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) }

func reduceMode(model map[string]any) (mapper, error) {
	settings, _ := model["settings"].(map[string]any)
	mode, _ := settings["mode"].(string)
	switch mode {
	case "", "strict":
		return nil, nil
	case "dropNN":
		return func(v *float64) *float64 {
			if nonNumber(v) {
				return nil
			}
			return v
		}, nil
	case "replaceNN":
		raw, ok := settings["replaceWithValue"]
		if !ok {
			return nil, fmt.Errorf("mode replaceNN needs settings.replaceWithValue")
		}
		r, err := toFloat(raw)
		if err != nil {
			return nil, fmt.Errorf("settings.replaceWithValue: %w", err)
		}
		return func(v *float64) *float64 {
			if nonNumber(v) {
				x := r
				return &x
			}
			return v
		}, nil
	default:
		return nil, fmt.Errorf("settings.mode %q is not strict, dropNN or replaceNN", mode)
	}
}

// Reducers are the reducers of Grafana's reduce expression.
var Reducers = []string{"sum", "mean", "min", "max", "count", "last", "median"}

func reduce(q Query, in []value) ([]value, error) {
	reducer, _ := q.Model["reducer"].(string)
	if !contains(Reducers, reducer) {
		return nil, fmt.Errorf("reducer %q is not one of %s", reducer, strings.Join(Reducers, ", "))
	}
	m, err := reduceMode(q.Model)
	if err != nil {
		return nil, err
	}
	var out []value
	for _, v := range in {
		switch v.kind {
		case kindNoData:
			out = append(out, noData())
		case kindNumber:
			n := v.num
			if m != nil {
				if n = m(n); n == nil {
					continue // dropped: this series has no instance
				}
			}
			out = append(out, value{kind: kindNumber, name: q.RefID, labels: v.labels.Copy(), num: copyNum(n)})
		case kindSeries:
			var pts []*float64
			for _, p := range v.points {
				x := p.v
				if m != nil {
					if x = m(x); x == nil {
						continue
					}
				}
				pts = append(pts, x)
			}
			r := reduceSeries(reducer, pts)
			out = append(out, value{kind: kindNumber, name: q.RefID, labels: v.labels.Copy(), num: &r})
		}
	}
	return out, nil
}

// reduceSeries: SSE's reducers over a series' points (after the mode).
func reduceSeries(reducer string, pts []*float64) float64 {
	nan := math.NaN()
	strict := func() ([]float64, bool) {
		xs := make([]float64, 0, len(pts))
		for _, p := range pts {
			if p == nil || math.IsNaN(*p) {
				return nil, false
			}
			xs = append(xs, *p)
		}
		return xs, true
	}
	switch reducer {
	case "count":
		return float64(len(pts))
	case "last":
		if len(pts) == 0 || pts[len(pts)-1] == nil {
			return nan
		}
		return *pts[len(pts)-1]
	}
	xs, ok := strict()
	if !ok {
		return nan
	}
	switch reducer {
	case "sum":
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s
	case "mean":
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs)) // 0/0 = NaN when empty
	case "min", "max":
		if len(xs) == 0 {
			return nan
		}
		r := xs[0]
		for _, x := range xs[1:] {
			if (reducer == "min" && x < r) || (reducer == "max" && x > r) {
				r = x
			}
		}
		return r
	case "median":
		if len(xs) == 0 {
			return nan
		}
		sort.Float64s(xs)
		if len(xs)%2 == 1 {
			return xs[len(xs)/2]
		}
		return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return nan
}

// ThresholdTypes are the evaluator types of Grafana's threshold
// expression; the two *_included ones exist only in newer releases.
var ThresholdTypes = []string{"gt", "lt", "within_range", "outside_range", "within_range_included", "outside_range_included"}

func threshold(q Query, in []value) ([]value, error) {
	conds, _ := q.Model["conditions"].([]any)
	if len(conds) == 0 {
		return nil, fmt.Errorf("no conditions (model.conditions[0].evaluator)")
	}
	c0, _ := conds[0].(map[string]any)
	if _, ok := c0["unloadEvaluator"]; ok {
		return nil, fmt.Errorf("conditions[0].unloadEvaluator (hysteresis) is not emulated")
	}
	ev, _ := c0["evaluator"].(map[string]any)
	typ, _ := ev["type"].(string)
	if !contains(ThresholdTypes, typ) {
		return nil, fmt.Errorf("evaluator type %q is not one of %s", typ, strings.Join(ThresholdTypes, ", "))
	}
	rawParams, _ := ev["params"].([]any)
	need := 1
	if strings.Contains(typ, "range") {
		need = 2
	}
	if len(rawParams) < need {
		return nil, fmt.Errorf("evaluator %s: incorrect number of arguments: got %d but need %d", typ, len(rawParams), need)
	}
	p := make([]float64, need)
	for i := range p {
		f, err := toFloat(rawParams[i])
		if err != nil {
			return nil, fmt.Errorf("evaluator %s: params[%d]: %w", typ, i, err)
		}
		// SSE prints the parameter with %f into a math expression.
		if p[i], err = strconv.ParseFloat(fmt.Sprintf("%f", f), 64); err != nil {
			return nil, err
		}
	}
	test := func(x float64) bool {
		switch typ {
		case "gt":
			return x > p[0]
		case "lt":
			return x < p[0]
		case "within_range":
			return x > p[0] && x < p[1]
		case "outside_range":
			return x < p[0] || x > p[1]
		case "within_range_included":
			return x >= p[0] && x <= p[1]
		default: // outside_range_included
			return x <= p[0] || x >= p[1]
		}
	}
	apply := func(v *float64) *float64 {
		if v == nil {
			return nil
		}
		r := 0.0
		if test(*v) {
			r = 1
		}
		return &r
	}
	out := make([]value, 0, len(in))
	for _, v := range in {
		switch v.kind {
		case kindNoData:
			out = append(out, noData())
		case kindNumber:
			out = append(out, value{kind: kindNumber, name: q.RefID, labels: v.labels.Copy(), num: apply(v.num)})
		case kindSeries:
			s := value{kind: kindSeries, name: q.RefID, labels: v.labels.Copy(), points: make([]point, len(v.points))}
			for i, pt := range v.points {
				s.points[i] = point{t: pt.t, v: apply(pt.v)}
			}
			out = append(out, s)
		}
	}
	return out, nil
}

func toFloat(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case json.Number:
		return x.Float64()
	case string:
		return strconv.ParseFloat(x, 64)
	}
	return 0, fmt.Errorf("%v (%T) is not a number", v, v)
}

func copyNum(v *float64) *float64 {
	if v == nil {
		return nil
	}
	x := *v
	return &x
}

func countKind(vs []value, k valueKind) int {
	n := 0
	for _, v := range vs {
		if v.kind == k {
			n++
		}
	}
	return n
}
