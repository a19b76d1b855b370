// Package alerting is a LABELLED EMULATION of the part of Grafana's alert
// engine that turns a datasource answer into alert instances. It stands in
// for Grafana's server, which is under the AGPL and is never built, run or
// imported by this project: nothing here comes from Grafana's server code.
// It follows Grafana's documented and observed behaviour (Grafana 10, the
// version the shipped rules target), and reads frames with Grafana's own
// data-plane reader, github.com/grafana/dataplane/sdata v0.0.9 (Apache-2.0,
// its LICENSE file in the module), the library Grafana's server-side
// expressions (SSE) call for typed frames.
//
// What it proves, without a Grafana server:
//
//   - LoadRules: the shipped alert-rule provisioning file
//     (provisioning/alerting/*.yaml, apiVersion 1) parses into rules whose
//     queries, expression chain, condition and states are what Grafana's
//     file provisioning reads.
//   - CheckDataplane: the plugin's frames meet the data-plane contract for
//     numeric data (numeric-wide, numeric-long or numeric-multi at type
//     version 0.1) that alerting reads: one number per series, labels that
//     identify the job and fill the rules' annotation templates, no string
//     value columns, no duplicate label sets, and an empty answer that reads
//     as "no data".
//   - Evaluate: what Grafana would do with those frames for a rule: the
//     frames of the datasource query become numbers (or time series) with
//     labels as SSE's data-plane path makes them (via sdata), then the
//     rule's reduce and threshold expressions run with SSE's semantics, and
//     the condition's numbers become alert instances as the alert
//     evaluator makes them (0 → Normal, non-zero → Alerting, null → NoData,
//     nothing at all → one rule-level NoData, duplicate label sets → the
//     whole rule errors).
//
// What it does not emulate: the "for" pending period and the state
// history across evaluations (an Instance is one evaluation tick; Firing
// means the condition held at that tick, which Grafana shows as Pending
// until "for" has elapsed), template expansion of annotations and labels,
// notification routing, the math, resample and classic_conditions
// expressions, SSE's legacy (non-data-plane) frame conversion, and
// Grafana's hysteresis (threshold "unloadEvaluator"). Each is refused with
// an error naming it rather than guessed.
//
// A test that passes here shows that the plugin's frames and the shipped
// rules agree with this model of Grafana's alerting; it is not a run of
// Grafana itself.
package alerting
