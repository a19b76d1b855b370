// Package demo generates realistic, made-up job history: the demo data of
// `jobsight-stack up --history` and the datasource benchmark's seed
// (test/dsbench). Every document it makes says so: source "generated"
// (jobmodel.SourceGenerated) and agent_version "generated".
//
// The generator (New, Next, Running) is deterministic for a Config: a
// seeded math/rand/v2 stream. It makes one or two clusters of partitions
// (cpu, bigmem, debug and 4-GPU gpu nodes; 8-GPU gpu-h100 nodes), 150
// users in 30 accounts with Zipf-like activity and stable membership, and
// submissions that follow the site's working week (Europe/Berlin by
// default: weekday working hours several times busier than nights and
// weekends). Run times are log-normal from minutes to days, capped by
// time limits that are mostly over-requested; some jobs are array tasks,
// some GPU jobs span nodes; CPU and GPU use and memory over-requests are
// spread so that every analysis class occurs. Each finished document gets
// jobmodel.TotalsOf and the real internal/analysis.AnalyzeJob (about a
// quarter of the 33 µs a document costs, JSON included: a million take
// half a minute of one core). A few percent lack a figure (memory, CPU,
// or GPU utilisation unreadable; pressure stalls and OOM kills on 2 % of
// jobs, nodes without PSI): the field is absent and named in
// missing_metrics. The others have pressure stall figures and OOM kills
// (fillPressure, drawn from the job's id so the random stream is as
// before): most stall little, some wait on storage, stall at their memory
// limit, run more threads than CPUs or lose a process to the OOM killer,
// so the analysis' io_stall, memory_stall, cpu_stall and oom_killed_child
// causes occur. The H100 jobs' GPUs have activity figures as the agent
// reads them through GPM (gpus[].activity, the summary's by
// jobmodel.SummarizeActivity, gpu.sm_activity_timeline; activity.go,
// drawn from the job's id too): most train in mixed precision, some are
// launch-bound, input-bound, FP32 without tensor cores or memory-bound,
// so that the analysis' GPU activity causes occur; a held-idle GPU's are
// zeros. The A100 jobs' GPUs (no GPM) name them missing, as the agent
// does: gpu_pcie, gpu_sm_activity, …, gpu_link. Finished jobs are handed
// out in submission order, a batch at a time, so a million never sit in
// memory.
//
// Series (SeriesOf, PartitionSeries) are what agents and the cluster-state
// collector write, derived from the documents: a finished job's series
// average to its document's figures (the CPU, memory and I/O stall
// counters rise at its pressure.*_some_ratio) and follow its stored GPU
// timeline; an H100 GPU's activity series average its document's figures,
// SM activity under utilisation at every point.
// WriteHistory writes a history's series by remote write oldest first in
// 30-minute slices: Prometheus 2.42 refuses samples more than an hour
// older than the newest it holds unless an out-of-order window is
// configured, and a fresh Prometheus written in time order takes them all
// with its stock configuration (its retention must cover the history:
// stack.PrometheusOptions.Retention). Each job is sampled at StepFor its
// run (30 s to 15 min: some 200 points a run), so that every job page has
// its charts while a month at 200 jobs a day stays some ten million
// samples.
//
// IndexJobs bulk-indexes a generator's documents, a few requests in
// flight; SeedHistory and Seeded.Feed are the demo stack's seeding and
// its running jobs' upkeep.
package demo
