package jobmodel

// ActivityFigures is the number of figures in a GPUActivity.
const ActivityFigures = 14

// ActivityStats returns pointers to a's figures in a fixed order: SM,
// SMOccupancy, Tensor, TensorFP64, TensorFP16, TensorINT8, FP64, FP32,
// FP16, DRAM, PCIeRx, PCIeTx, LinkRx, LinkTx. The agent's per-GPU
// summaries are kept in the same order.
func ActivityStats(a *GPUActivity) [ActivityFigures]**Stat {
	return [...]**Stat{&a.SM, &a.SMOccupancy, &a.Tensor, &a.TensorFP64, &a.TensorFP16, &a.TensorINT8,
		&a.FP64, &a.FP32, &a.FP16, &a.DRAM, &a.PCIeRxBytesPerSecond, &a.PCIeTxBytesPerSecond,
		&a.LinkRxBytesPerSecond, &a.LinkTxBytesPerSecond}
}

// SummarizeActivity joins GPUs' activity into a summary's: per figure the
// mean of the GPUs' averages (over the GPUs that have it) and the largest
// of their 95th percentiles and peaks. Nil when no GPU has any figure.
func SummarizeActivity(devs []*GPUActivity) *GPUActivity {
	var out GPUActivity
	outStats := ActivityStats(&out)
	found := false
	for i := range outStats {
		var sum float64
		var n int
		var st Stat
		for _, a := range devs {
			if a == nil {
				continue
			}
			v := *ActivityStats(a)[i]
			if v == nil || v.Avg == nil {
				continue
			}
			sum += *v.Avg
			n++
			st.P95 = maxPtr(st.P95, v.P95)
			st.Peak = maxPtr(st.Peak, v.Peak)
		}
		if n > 0 {
			st.Avg = Ptr(sum / float64(n))
			*outStats[i] = &st
			found = true
		}
	}
	if !found {
		return nil
	}
	return &out
}
