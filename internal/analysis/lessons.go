package analysis

// Cause ids (jobmodel.Cause.ID); each names a rule and its configuration
// section (analysis.rules.<id>).
const (
	CauseGPUsHeldIdle        = "gpus_held_idle"
	CauseGPUUnused           = "gpu_unused"
	CauseParallelismMismatch = "parallelism_mismatch"
	CauseCPUBottleneck       = "cpu_bottleneck"
	CauseUtilizationDrop     = "utilization_drop"
	// CauseGPUInputPipelineBound and the GPU activity causes below read
	// gpus[].activity (what the GPU did beyond utilisation).
	CauseGPUInputPipelineBound   = "gpu_input_pipeline_bound"
	CauseSmallJobLargeGPU        = "small_job_large_gpu"
	CauseMemoryResidentLowUtil   = "memory_resident_low_util"
	CauseOverScaled              = "over_scaled"
	CauseGPULaunchBound          = "gpu_launch_bound"
	CauseGPUMemoryBandwidthBound = "gpu_memory_bandwidth_bound"
	CauseGPUTensorUnused         = "gpu_tensor_unused"
	CauseTooManyCoresPerGPU      = "too_many_cores_per_gpu"
	CauseTooMuchMemoryPerGPU     = "too_much_memory_per_gpu"
	CauseCPUJobOnGPUPartition    = "cpu_job_on_gpu_partition"
	CauseSerialJobManyCores      = "serial_job_many_cores"
	CauseCPUOverrequest          = "cpu_overrequest"
	CauseIOStall                 = "io_stall"
	CauseMemoryStall             = "memory_stall"
	CauseCPUStall                = "cpu_stall"
	CauseOOMKilledChild          = "oom_killed_child"
	CauseMemoryOverrequest       = "memory_overrequest"
	CauseWalltimeOverrequest     = "walltime_overrequest"
)

// GPU vendors (jobmodel.Analysis.Vendor).
const (
	VendorNVIDIA = "nvidia"
	VendorAMD    = "amd"
)

// CauseIDs returns every cause id, in the order the rules are evaluated.
func CauseIDs() []string {
	c := Default()
	var ids []string
	for _, rt := range c.ruleTexts() {
		ids = append(ids, rt.id)
	}
	return ids
}

// text is a cause's built-in title, lesson and documentation link; the
// AMD variants are empty where the wording does not depend on the vendor.
type text struct {
	title             string
	lesson, lessonAMD string
	docURL, docURLAMD string
}

const (
	docSbatch     = "https://slurm.schedmd.com/sbatch.html"
	docGres       = "https://slurm.schedmd.com/gres.html"
	docDDP        = "https://pytorch.org/tutorials/intermediate/ddp_tutorial.html"
	docDataLoad   = "https://pytorch.org/docs/stable/data.html"
	docTuning     = "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html"
	docCUDA       = "https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/index.html"
	docHIP        = "https://rocm.docs.amd.com/projects/HIP/en/latest/"
	docMIG        = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/"
	docROCm       = "https://rocm.docs.amd.com/"
	docSbcast     = "https://slurm.schedmd.com/sbcast.html"
	docPSI        = "https://docs.kernel.org/accounting/psi.html"
	docPerfBG     = "https://docs.nvidia.com/deeplearning/performance/dl-performance-gpu-background/index.html"
	docAMP        = "https://pytorch.org/docs/stable/amp.html"
	docCUDAGraphs = "https://pytorch.org/docs/stable/notes/cuda.html#cuda-graphs"
)

// texts are the built-in lessons: neutral, 2–3 sentences, saying what
// usually causes the pattern and what usually helps.
var texts = map[string]text{
	CauseGPUsHeldIdle: {
		title: "GPUs held with no process of the job",
		lesson: "Some GPUs given to the job never ran any of its processes, so they stayed reserved without doing work. " +
			"Request only the GPUs the program uses, or check that it is started once per GPU (srun, torchrun) and that CUDA_VISIBLE_DEVICES is not narrowed in the job script.",
		lessonAMD: "Some GPUs given to the job never ran any of its processes, so they stayed reserved without doing work. " +
			"Request only the GPUs the program uses, or check that it is started once per GPU (srun, torchrun) and that ROCR_VISIBLE_DEVICES or HIP_VISIBLE_DEVICES is not narrowed in the job script.",
		docURL: docGres,
	},
	CauseGPUUnused: {
		title: "GPUs opened but barely used",
		lesson: "The job's processes opened the GPU but gave it almost no work, which usually means the computation ran on the CPU. " +
			"Check that the program is built with CUDA support and moves its data and model to the GPU (in PyTorch: torch.cuda.is_available() and .to(\"cuda\")); CPU-only work usually starts sooner in a CPU partition.",
		lessonAMD: "The job's processes opened the GPU but gave it almost no work, which usually means the computation ran on the CPU. " +
			"Check that the program is built with ROCm/HIP support and moves its data and model to the GPU (PyTorch's ROCm build still calls the device \"cuda\"); CPU-only work usually starts sooner in a CPU partition.",
		docURL: docCUDA, docURLAMD: docHIP,
	},
	CauseParallelismMismatch: {
		title: "Only some of the GPUs did work",
		lesson: "Only some of the job's GPUs were busy, which is typical of a program that uses one GPU unless told otherwise. " +
			"Either request as many GPUs as the program uses, or run it data-parallel over all of them (for example PyTorch DistributedDataParallel, one process per GPU, communicating through NCCL).",
		lessonAMD: "Only some of the job's GPUs were busy, which is typical of a program that uses one GPU unless told otherwise. " +
			"Either request as many GPUs as the program uses, or run it data-parallel over all of them (for example PyTorch DistributedDataParallel, one process per GPU, communicating through RCCL on ROCm).",
		docURL: docDDP,
	},
	CauseCPUBottleneck: {
		title: "CPUs busy while the GPUs waited (data loading or preprocessing)",
		lesson: "The job's CPUs were fully busy while its GPUs were often idle, which usually means data loading or preprocessing cannot keep up with the GPU. " +
			"More data-loader workers with a matching --cpus-per-task, pinned host memory and pre-processed or cached input often help; Nsight Systems shows where the time goes.",
		lessonAMD: "The job's CPUs were fully busy while its GPUs were often idle, which usually means data loading or preprocessing cannot keep up with the GPU. " +
			"More data-loader workers with a matching --cpus-per-task, pinned host memory and pre-processed or cached input often help; ROCm's profilers (rocprof) show where the time goes.",
		docURL: docDataLoad,
	},
	CauseUtilizationDrop: {
		title: "GPU utilisation dropped after the start (I/O or synchronisation)",
		lesson: "GPU utilisation fell well below its early level later in the run, which points to time spent on I/O (reading input, writing checkpoints) or waiting at synchronisation points between processes. " +
			"Staging input on faster or node-local storage, writing checkpoints less often or asynchronously, and looking for slow ranks in NCCL collectives usually help.",
		lessonAMD: "GPU utilisation fell well below its early level later in the run, which points to time spent on I/O (reading input, writing checkpoints) or waiting at synchronisation points between processes. " +
			"Staging input on faster or node-local storage, writing checkpoints less often or asynchronously, and looking for slow ranks in RCCL collectives usually help.",
		docURL: docTuning,
	},
	CauseGPUInputPipelineBound: {
		title: "Host-to-device copies kept the GPU waiting (input pipeline)",
		lesson: "The GPU received a lot of data from the host while its SMs were often idle, which usually means that copies over PCIe, not computation, set the pace. " +
			"Pinned host memory (pin_memory=True in a PyTorch DataLoader) with non_blocking=True copies that overlap computation, more DataLoader workers with prefetching, and keeping data that is reused on the GPU instead of copying it at every step usually help; Nsight Systems shows the copies on its timeline.",
		lessonAMD: "The GPU received a lot of data from the host while its compute units were often idle, which usually means that copies over PCIe, not computation, set the pace. " +
			"Pinned host memory (pin_memory=True in a PyTorch DataLoader) with non_blocking=True copies that overlap computation, more DataLoader workers with prefetching, and keeping data that is reused on the GPU instead of copying it at every step usually help; rocprof's copy and kernel traces show where the time goes.",
		docURL: docDataLoad,
	},
	CauseSmallJobLargeGPU: {
		title: "A smaller GPU or GPU slice would do",
		lesson: "The job used a small part of a large GPU's memory and compute. " +
			"A smaller GPU or a MIG slice (a fraction of an A100 or H100 with its own memory) would likely run it at a similar speed and leave the whole GPU to jobs that need it; your site's documentation says which partitions offer them.",
		lessonAMD: "The job used a small part of a large GPU's memory and compute. " +
			"A smaller GPU or a compute partition of an Instinct GPU (CPX mode splits it into several devices) would likely run it at a similar speed and leave the whole GPU to jobs that need it; your site's documentation says which partitions offer them.",
		docURL: docMIG, docURLAMD: docROCm,
	},
	CauseMemoryResidentLowUtil: {
		title: "GPU memory in use, GPU rarely busy",
		lesson: "The GPU held a lot of data in its memory but was rarely computing, which is typical of interactive sessions and inference services waiting for requests. " +
			"Batching requests, running inference as batch jobs that end when the work is done, or ending sessions when idle lets the GPU serve other work.",
		docURL: docSbatch,
	},
	CauseOverScaled: {
		title: "More GPU than the work needed",
		lesson: "The job's GPUs were lightly used and little of their memory was filled, so the work was small for the GPUs it held. " +
			"Fewer GPUs, a smaller GPU model or more work per GPU call (a larger batch size, fewer host-device copies) usually give the same result with a shorter wait.",
		docURL: docTuning,
	},
	CauseGPULaunchBound: {
		title: "GPU busy with kernels too small to fill it (launch-bound)",
		lesson: "A kernel ran on the GPU most of the time, but the kernels kept few of its SMs busy: they were too small for the GPU, or were launched one at a time while the host did other work. " +
			"Larger batches, CUDA graphs or torch.compile(mode=\"reduce-overhead\"), fused kernels and fewer host synchronisations (.item(), .cpu() or printing GPU tensors inside the loop) give each launch more work; Nsight Systems shows the gaps between kernels. " +
			"Where the work cannot grow, a smaller GPU or a MIG slice would likely run it at a similar speed.",
		lessonAMD: "A kernel ran on the GPU most of the time, but the kernels kept few of its compute units busy: they were too small for the GPU, or were launched one at a time while the host did other work. " +
			"Larger batches, HIP graphs or torch.compile(mode=\"reduce-overhead\"), fused kernels and fewer host synchronisations (.item(), .cpu() or printing GPU tensors inside the loop) give each launch more work; rocprof's kernel trace shows the gaps between kernels. " +
			"Where the work cannot grow, a smaller GPU or a compute partition of an Instinct GPU (CPX mode) would likely run it at a similar speed.",
		docURL: docCUDAGraphs, docURLAMD: docHIP,
	},
	CauseGPUMemoryBandwidthBound: {
		title: "GPU memory bandwidth set the pace (memory-bound kernels)",
		lesson: "The GPU's memory bandwidth, not its arithmetic units, limited the job: its kernels move much data for each operation, as elementwise operations, normalisations and unfused attention do. " +
			"Fusing elementwise operations (torch.compile), fused attention (FlashAttention, PyTorch's scaled_dot_product_attention), larger matrix operations with more arithmetic per byte, and lower precision (bf16 or fp16 move half the bytes of fp32) usually help; Nsight Compute's memory workload analysis shows which kernels are bound.",
		lessonAMD: "The GPU's memory bandwidth, not its arithmetic units, limited the job: its kernels move much data for each operation, as elementwise operations, normalisations and unfused attention do. " +
			"Fusing elementwise operations (torch.compile), fused attention (FlashAttention, PyTorch's scaled_dot_product_attention), larger matrix operations with more arithmetic per byte, and lower precision (bf16 or fp16 move half the bytes of fp32) usually help; rocprof's counters show which kernels are bound.",
		docURL: docPerfBG, docURLAMD: docROCm,
	},
	CauseGPUTensorUnused: {
		title: "Floating-point work without the tensor cores",
		lesson: "The GPU's SMs were busy with floating-point work on their FP32 units while its tensor cores, which do matrix arithmetic many times faster, stayed idle. " +
			"Mixed precision (torch.autocast with bf16 or fp16), TF32 for FP32 matrix products (torch.backends.cuda.matmul.allow_tf32 = True, or torch.set_float32_matmul_precision(\"high\")) and checking that the framework takes its cuBLAS and cuDNN paths (supported data types, matrix sizes that are multiples of 8) usually put them to work; Nsight Compute shows which kernels use them.",
		lessonAMD: "The GPU's compute units were busy with floating-point work on their FP32 units while its matrix cores, which do matrix arithmetic many times faster, stayed idle. " +
			"Mixed precision (torch.autocast with bf16 or fp16), reduced-precision FP32 matrix products where the GPU offers them (torch.set_float32_matmul_precision(\"high\")) and checking that the framework takes its rocBLAS, hipBLASLt and MIOpen paths (supported data types and matrix shapes) usually put them to work; rocprof shows which kernels use them.",
		docURL: docAMP,
	},
	CauseTooManyCoresPerGPU: {
		title: "Many CPU cores per GPU, few of them used",
		lesson: "The job requested many CPU cores per GPU and used few of them. " +
			"Cores held beyond what a GPU job uses can leave a node's other GPUs without cores for other jobs; request what the job needs with --cpus-per-task.",
		docURL: docSbatch,
	},
	CauseTooMuchMemoryPerGPU: {
		title: "Much host memory per GPU, little of it used",
		lesson: "The job requested a lot of host memory per GPU and used under half of it. " +
			"Memory held this way can keep other jobs off the node's remaining GPUs; request the peak the job needs plus some headroom with --mem.",
		docURL: docSbatch,
	},
	CauseCPUJobOnGPUPartition: {
		title: "CPU-only job on a GPU partition",
		lesson: "The job used no GPU but ran in a partition meant for GPU jobs, where its CPUs and memory are needed by GPU jobs. " +
			"CPU-only work usually starts sooner in a CPU partition (--partition).",
		docURL: docSbatch,
	},
	CauseSerialJobManyCores: {
		title: "Serial program on several cores",
		lesson: "The job never used much more than one core at a time, which is how a serial (single-threaded) program behaves. " +
			"Unless the program is set up to run in parallel (threads, MPI or multiprocessing), --cpus-per-task=1 runs it just as fast and leaves the other cores to other jobs.",
		docURL: docSbatch,
	},
	CauseCPUOverrequest: {
		title: "CPUs mostly idle",
		lesson: "The job used a small share of the CPU time it reserved. " +
			"Check that the program's thread or process count matches the request (for example OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK), or request fewer CPUs; a short scaling test with 1, 2, 4… CPUs shows how many help.",
		docURL: docSbatch,
	},
	CauseIOStall: {
		title: "Tasks waited for storage much of the run",
		lesson: "For much of the run the job's tasks were waiting for storage rather than computing, so the file system, not the CPU or GPU request, set its pace. " +
			"Staging input to node-local scratch ($TMPDIR or the site's local disk, for instance with sbcast) and writing temporary files there, writing in larger sequential blocks and calling fsync less often usually help; more CPUs would not.",
		docURL: docSbcast,
	},
	CauseMemoryStall: {
		title: "Tasks stalled at the memory limit (reclaim)",
		lesson: "The job's tasks often waited while the kernel reclaimed memory at the job's limit and read evicted pages back in, which slows a job down long before it is killed for memory. " +
			"Requesting more memory (--mem) with headroom over the measured peak, or holding less in memory at once (smaller batches or chunks, memory-mapped input), usually removes these stalls.",
		docURL: docPSI,
	},
	CauseCPUStall: {
		title: "Threads waited for a CPU (more threads than CPUs)",
		lesson: "The job's runnable threads often waited for a CPU, which happens when a program starts more threads than the CPUs it was given, for instance a threaded maths library or runtime that sizes itself from all of the node's cores. " +
			"Setting OMP_NUM_THREADS (and MKL_NUM_THREADS, OPENBLAS_NUM_THREADS or the framework's own thread setting) to $SLURM_CPUS_PER_TASK, or requesting as many CPUs as the program runs threads, usually makes it faster.",
		docURL: docSbatch,
	},
	CauseOOMKilledChild: {
		title: "A process of the job was killed for memory",
		lesson: "The kernel killed one or more of the job's processes for lack of memory, yet the job went on and Slurm did not report it OUT_OF_MEMORY, so its results may be incomplete (a worker, a data loader or a step may be missing). " +
			"The job's output usually shows the process killed by signal 9; requesting more memory (--mem) or holding less in that process avoids it.",
		docURL: docSbatch,
	},
	CauseMemoryOverrequest: {
		title: "Memory request well above use",
		lesson: "The job used much less memory than it requested. " +
			"Requesting the measured peak plus some headroom (--mem) shortens the wait for a node and leaves memory to other jobs.",
		docURL: docSbatch,
	},
	CauseWalltimeOverrequest: {
		title: "Time limit well above the run time",
		lesson: "The job finished well within its time limit. " +
			"A closer limit (--time, with a margin) lets the scheduler start the job sooner, for example in gaps before other jobs (backfill).",
		docURL: docSbatch,
	},
}

// lesson returns a cause's lesson and link for the job's vendor: the
// site's text where configured, else the built-in one.
func lesson(cfg *Config, id, vendor string) (string, string) {
	t := texts[id]
	rt := cfg.ruleText(id)
	l, u := t.lesson, t.docURL
	if vendor == VendorAMD {
		if t.lessonAMD != "" {
			l = t.lessonAMD
		}
		if t.docURLAMD != "" {
			u = t.docURLAMD
		}
	}
	if rt.Lesson != "" {
		l = rt.Lesson
	}
	if rt.DocURL != "" {
		u = rt.DocURL
	}
	if vendor == VendorAMD {
		if rt.LessonAMD != "" {
			l = rt.LessonAMD
		}
		if rt.DocURLAMD != "" {
			u = rt.DocURLAMD
		}
	}
	return l, u
}
