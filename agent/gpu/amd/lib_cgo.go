//go:build cgo

package amd

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

// The AMD SMI C API, declared here rather than included so that the agent
// builds without ROCm. Signatures match include/amd_smi/amdsmi.h of
// ROCm/amdsmi tag rocm-6.2.0 (AMDSMI_LIB_VERSION 24.6.2) and are unchanged
// in rocm-6.0.0, rocm-6.1.0 and the ROCm 6.3, 6.4 and 7.x headers:
//
//   amdsmi_status_t is an int-sized enum          -> uint32_t
//   amdsmi_processor_handle, amdsmi_socket_handle -> void *
//   amdsmi_bdf_t is a union with a uint64_t       -> uint64_t
//   enum arguments (memory, clock, temperature)   -> uint32_t
//
// Struct arguments are passed as void *: the Go side hands in buffers much
// larger than any release's struct and decodes fields by offset (layout.go).
typedef uint32_t jsmi_status;
typedef void *jsmi_handle;

#define JSMI_NO_SYMBOL ((jsmi_status)0xFFFF0001u)

typedef struct {
	void *dl;
	jsmi_status (*init)(uint64_t);
	jsmi_status (*shut_down)(void);
	jsmi_status (*get_lib_version)(void *);
	jsmi_status (*get_socket_handles)(uint32_t *, jsmi_handle *);
	jsmi_status (*get_processor_handles)(jsmi_handle, uint32_t *, jsmi_handle *);
	jsmi_status (*get_gpu_device_uuid)(jsmi_handle, unsigned int *, char *);
	jsmi_status (*get_gpu_asic_info)(jsmi_handle, void *);
	jsmi_status (*get_gpu_board_info)(jsmi_handle, void *);
	jsmi_status (*get_gpu_device_bdf)(jsmi_handle, uint64_t *);
	jsmi_status (*get_gpu_compute_partition)(jsmi_handle, char *, uint32_t);
	jsmi_status (*get_gpu_enumeration_info)(jsmi_handle, void *);
	jsmi_status (*get_gpu_activity)(jsmi_handle, void *);
	jsmi_status (*get_gpu_memory_total)(jsmi_handle, uint32_t, uint64_t *);
	jsmi_status (*get_gpu_memory_usage)(jsmi_handle, uint32_t, uint64_t *);
	jsmi_status (*get_power_info)(jsmi_handle, void *);
	jsmi_status (*get_energy_count)(jsmi_handle, uint64_t *, float *, uint64_t *);
	jsmi_status (*get_temp_metric)(jsmi_handle, uint32_t, uint32_t, int64_t *);
	jsmi_status (*get_clock_info)(jsmi_handle, uint32_t, void *);
	jsmi_status (*get_gpu_process_list)(jsmi_handle, uint32_t *, void *);
	jsmi_status (*get_gpu_process_info)(jsmi_handle, uint32_t, void *);
	jsmi_status (*get_gpu_metrics_info)(jsmi_handle, void *);
} jsmi_lib;

// jsmi_open loads path and resolves the symbols. It returns NULL and sets
// *err to dlerror()'s message when the library cannot be loaded or lacks a
// required function; optional functions (not in every release) stay NULL.
static jsmi_lib *jsmi_open(const char *path, const char **err, const char **missing) {
	*err = NULL;
	*missing = NULL;
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (dl == NULL) {
		*err = dlerror();
		return NULL;
	}
	jsmi_lib *l = calloc(1, sizeof(jsmi_lib));
	if (l == NULL) {
		dlclose(dl);
		*err = "out of memory";
		return NULL;
	}
	l->dl = dl;
#define JSMI_SYM(field, name) *(void **)(&l->field) = dlsym(dl, name)
	JSMI_SYM(init, "amdsmi_init");
	JSMI_SYM(shut_down, "amdsmi_shut_down");
	JSMI_SYM(get_lib_version, "amdsmi_get_lib_version");
	JSMI_SYM(get_socket_handles, "amdsmi_get_socket_handles");
	JSMI_SYM(get_processor_handles, "amdsmi_get_processor_handles");
	JSMI_SYM(get_gpu_device_uuid, "amdsmi_get_gpu_device_uuid");
	JSMI_SYM(get_gpu_asic_info, "amdsmi_get_gpu_asic_info");
	JSMI_SYM(get_gpu_board_info, "amdsmi_get_gpu_board_info");
	JSMI_SYM(get_gpu_device_bdf, "amdsmi_get_gpu_device_bdf");
	JSMI_SYM(get_gpu_compute_partition, "amdsmi_get_gpu_compute_partition");
	JSMI_SYM(get_gpu_enumeration_info, "amdsmi_get_gpu_enumeration_info");
	JSMI_SYM(get_gpu_activity, "amdsmi_get_gpu_activity");
	JSMI_SYM(get_gpu_memory_total, "amdsmi_get_gpu_memory_total");
	JSMI_SYM(get_gpu_memory_usage, "amdsmi_get_gpu_memory_usage");
	JSMI_SYM(get_power_info, "amdsmi_get_power_info");
	JSMI_SYM(get_energy_count, "amdsmi_get_energy_count");
	JSMI_SYM(get_temp_metric, "amdsmi_get_temp_metric");
	JSMI_SYM(get_clock_info, "amdsmi_get_clock_info");
	JSMI_SYM(get_gpu_process_list, "amdsmi_get_gpu_process_list");
	JSMI_SYM(get_gpu_process_info, "amdsmi_get_gpu_process_info");
	JSMI_SYM(get_gpu_metrics_info, "amdsmi_get_gpu_metrics_info");
#undef JSMI_SYM
	const char *required = NULL;
	if (l->init == NULL) required = "amdsmi_init";
	else if (l->shut_down == NULL) required = "amdsmi_shut_down";
	else if (l->get_socket_handles == NULL) required = "amdsmi_get_socket_handles";
	else if (l->get_processor_handles == NULL) required = "amdsmi_get_processor_handles";
	if (required != NULL) {
		*missing = required;
		dlclose(dl);
		free(l);
		return NULL;
	}
	return l;
}

static void jsmi_close(jsmi_lib *l) {
	dlclose(l->dl);
	free(l);
}

static jsmi_status jsmi_init(jsmi_lib *l, uint64_t flags) { return l->init(flags); }
static jsmi_status jsmi_shut_down(jsmi_lib *l) { return l->shut_down(); }

static jsmi_status jsmi_get_lib_version(jsmi_lib *l, void *v) {
	return l->get_lib_version ? l->get_lib_version(v) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_socket_handles(jsmi_lib *l, uint32_t *n, jsmi_handle *s) {
	return l->get_socket_handles(n, s);
}
static jsmi_status jsmi_get_processor_handles(jsmi_lib *l, uintptr_t s, uint32_t *n, jsmi_handle *p) {
	return l->get_processor_handles((jsmi_handle)s, n, p);
}
static jsmi_status jsmi_get_gpu_device_uuid(jsmi_lib *l, uintptr_t h, unsigned int *n, char *u) {
	return l->get_gpu_device_uuid ? l->get_gpu_device_uuid((jsmi_handle)h, n, u) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_gpu_asic_info(jsmi_lib *l, uintptr_t h, void *b) {
	return l->get_gpu_asic_info ? l->get_gpu_asic_info((jsmi_handle)h, b) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_gpu_board_info(jsmi_lib *l, uintptr_t h, void *b) {
	return l->get_gpu_board_info ? l->get_gpu_board_info((jsmi_handle)h, b) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_gpu_device_bdf(jsmi_lib *l, uintptr_t h, uint64_t *bdf) {
	return l->get_gpu_device_bdf ? l->get_gpu_device_bdf((jsmi_handle)h, bdf) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_gpu_compute_partition(jsmi_lib *l, uintptr_t h, char *b, uint32_t n) {
	return l->get_gpu_compute_partition ? l->get_gpu_compute_partition((jsmi_handle)h, b, n) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_gpu_enumeration_info(jsmi_lib *l, uintptr_t h, void *b) {
	return l->get_gpu_enumeration_info ? l->get_gpu_enumeration_info((jsmi_handle)h, b) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_gpu_activity(jsmi_lib *l, uintptr_t h, void *b) {
	return l->get_gpu_activity ? l->get_gpu_activity((jsmi_handle)h, b) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_gpu_memory_total(jsmi_lib *l, uintptr_t h, uint32_t t, uint64_t *v) {
	return l->get_gpu_memory_total ? l->get_gpu_memory_total((jsmi_handle)h, t, v) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_gpu_memory_usage(jsmi_lib *l, uintptr_t h, uint32_t t, uint64_t *v) {
	return l->get_gpu_memory_usage ? l->get_gpu_memory_usage((jsmi_handle)h, t, v) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_power_info(jsmi_lib *l, uintptr_t h, void *b) {
	return l->get_power_info ? l->get_power_info((jsmi_handle)h, b) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_energy_count(jsmi_lib *l, uintptr_t h, uint64_t *acc, float *res, uint64_t *ts) {
	return l->get_energy_count ? l->get_energy_count((jsmi_handle)h, acc, res, ts) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_temp_metric(jsmi_lib *l, uintptr_t h, uint32_t s, uint32_t m, int64_t *v) {
	return l->get_temp_metric ? l->get_temp_metric((jsmi_handle)h, s, m, v) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_clock_info(jsmi_lib *l, uintptr_t h, uint32_t c, void *b) {
	return l->get_clock_info ? l->get_clock_info((jsmi_handle)h, c, b) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_gpu_process_list(jsmi_lib *l, uintptr_t h, uint32_t *n, void *b) {
	return l->get_gpu_process_list ? l->get_gpu_process_list((jsmi_handle)h, n, b) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_gpu_process_info(jsmi_lib *l, uintptr_t h, uint32_t pid, void *b) {
	return l->get_gpu_process_info ? l->get_gpu_process_info((jsmi_handle)h, pid, b) : JSMI_NO_SYMBOL;
}
static jsmi_status jsmi_get_gpu_metrics_info(jsmi_lib *l, uintptr_t h, void *b) {
	return l->get_gpu_metrics_info ? l->get_gpu_metrics_info((jsmi_handle)h, b) : JSMI_NO_SYMBOL;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/jobsight/jobsight/agent/gpu"
)

// cBinding is the binding to a dlopen'ed libamd_smi.so.
type cBinding struct {
	l *C.jsmi_lib
}

// openBinding loads the first candidate library that has the AMD SMI entry
// points and initialises it for AMD GPUs. It returns the path it loaded.
func openBinding(candidates []string) (binding, string, error) {
	var tried []string
	for _, path := range candidates {
		cpath := C.CString(path)
		var cerr, missing *C.char
		l := C.jsmi_open(cpath, &cerr, &missing)
		C.free(unsafe.Pointer(cpath))
		if l == nil {
			switch {
			case missing != nil:
				tried = append(tried, fmt.Sprintf("%s: no symbol %s", path, C.GoString(missing)))
			case cerr != nil:
				tried = append(tried, C.GoString(cerr))
			default:
				tried = append(tried, path+": cannot load")
			}
			continue
		}
		if st := status(C.jsmi_init(l, initAMDGPUs)); st != statusSuccess {
			C.jsmi_close(l)
			// The library is there but the driver does not answer: no
			// backend will find a GPU on this host.
			return nil, "", fmt.Errorf("amd: %s: %w: %w: %w", path, check("amdsmi_init(AMDSMI_INIT_AMD_GPUS)", st),
				errNoDevices, gpu.ErrUnavailable)
		}
		return &cBinding{l: l}, path, nil
	}
	return nil, "", fmt.Errorf("amd: load AMD SMI library (%s): %w", strings.Join(tried, "; "), gpu.ErrUnavailable)
}

func ptr(buf []byte) unsafe.Pointer {
	if len(buf) == 0 {
		return nil
	}
	return unsafe.Pointer(&buf[0])
}

func (b *cBinding) libVersion(buf []byte) status {
	return status(C.jsmi_get_lib_version(b.l, ptr(buf)))
}

// handles calls a "count, then fill" amdsmi enumeration function.
func handles(call string, get func(n *C.uint32_t, out *C.jsmi_handle) C.jsmi_status) ([]uintptr, error) {
	var n C.uint32_t
	if st := status(get(&n, nil)); st != statusSuccess {
		return nil, check(call, st)
	}
	if n == 0 {
		return nil, nil
	}
	if n > 4096 {
		return nil, fmt.Errorf("%s: implausible count %d", call, uint32(n))
	}
	out := (*C.jsmi_handle)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(uintptr(0)))))
	if out == nil {
		return nil, errors.New(call + ": out of memory")
	}
	defer C.free(unsafe.Pointer(out))
	if st := status(get(&n, out)); st != statusSuccess {
		return nil, check(call, st)
	}
	list := unsafe.Slice(out, int(n))
	hs := make([]uintptr, 0, len(list))
	for _, h := range list {
		hs = append(hs, uintptr(h))
	}
	return hs, nil
}

func (b *cBinding) processors() ([]handle, error) {
	sockets, err := handles("amdsmi_get_socket_handles", func(n *C.uint32_t, out *C.jsmi_handle) C.jsmi_status {
		return C.jsmi_get_socket_handles(b.l, n, out)
	})
	if err != nil {
		return nil, err
	}
	var all []handle
	for _, s := range sockets {
		procs, err := handles("amdsmi_get_processor_handles", func(n *C.uint32_t, out *C.jsmi_handle) C.jsmi_status {
			return C.jsmi_get_processor_handles(b.l, C.uintptr_t(s), n, out)
		})
		if err != nil {
			return nil, err
		}
		for _, p := range procs {
			all = append(all, handle(p))
		}
	}
	return all, nil
}

func (b *cBinding) uuid(h handle) (string, status) {
	buf := make([]byte, uuidBufBytes)
	n := C.uint(uuidBufBytes) // the constant, not len(buf): gosec checks the cgo output, where a converted len is G115
	st := status(C.jsmi_get_gpu_device_uuid(b.l, C.uintptr_t(h), &n, (*C.char)(ptr(buf))))
	return cString(buf, 0, len(buf)), st
}

func (b *cBinding) asicInfo(h handle, buf []byte) status {
	return status(C.jsmi_get_gpu_asic_info(b.l, C.uintptr_t(h), ptr(buf)))
}

func (b *cBinding) boardInfo(h handle, buf []byte) status {
	return status(C.jsmi_get_gpu_board_info(b.l, C.uintptr_t(h), ptr(buf)))
}

func (b *cBinding) deviceBDF(h handle) (uint64, status) {
	var v C.uint64_t
	st := status(C.jsmi_get_gpu_device_bdf(b.l, C.uintptr_t(h), &v))
	return uint64(v), st
}

func (b *cBinding) computePartition(h handle) (string, status) {
	buf := make([]byte, nameBufBytes)
	st := status(C.jsmi_get_gpu_compute_partition(b.l, C.uintptr_t(h), (*C.char)(ptr(buf)), C.uint32_t(nameBufBytes)))
	return cString(buf, 0, len(buf)), st
}

func (b *cBinding) enumerationInfo(h handle, buf []byte) status {
	return status(C.jsmi_get_gpu_enumeration_info(b.l, C.uintptr_t(h), ptr(buf)))
}

func (b *cBinding) activity(h handle, buf []byte) status {
	return status(C.jsmi_get_gpu_activity(b.l, C.uintptr_t(h), ptr(buf)))
}

func (b *cBinding) memoryTotal(h handle, kind uint32) (uint64, status) {
	var v C.uint64_t
	st := status(C.jsmi_get_gpu_memory_total(b.l, C.uintptr_t(h), C.uint32_t(kind), &v))
	return uint64(v), st
}

func (b *cBinding) memoryUsage(h handle, kind uint32) (uint64, status) {
	var v C.uint64_t
	st := status(C.jsmi_get_gpu_memory_usage(b.l, C.uintptr_t(h), C.uint32_t(kind), &v))
	return uint64(v), st
}

func (b *cBinding) powerInfo(h handle, buf []byte) status {
	return status(C.jsmi_get_power_info(b.l, C.uintptr_t(h), ptr(buf)))
}

func (b *cBinding) energyCount(h handle) (uint64, float32, status) {
	var acc, ts C.uint64_t
	var res C.float
	st := status(C.jsmi_get_energy_count(b.l, C.uintptr_t(h), &acc, &res, &ts))
	return uint64(acc), float32(res), st
}

func (b *cBinding) tempMetric(h handle, sensor, metric uint32) (int64, status) {
	var v C.int64_t
	st := status(C.jsmi_get_temp_metric(b.l, C.uintptr_t(h), C.uint32_t(sensor), C.uint32_t(metric), &v))
	return int64(v), st
}

func (b *cBinding) clockInfo(h handle, clk uint32, buf []byte) status {
	return status(C.jsmi_get_clock_info(b.l, C.uintptr_t(h), C.uint32_t(clk), ptr(buf)))
}

func (b *cBinding) processList(h handle, max *uint32, buf []byte) status {
	n := C.uint32_t(*max)
	st := status(C.jsmi_get_gpu_process_list(b.l, C.uintptr_t(h), &n, ptr(buf)))
	*max = uint32(n)
	return st
}

func (b *cBinding) processInfo(h handle, pid uint32, buf []byte) status {
	return status(C.jsmi_get_gpu_process_info(b.l, C.uintptr_t(h), C.uint32_t(pid), ptr(buf)))
}

func (b *cBinding) gpuMetrics(h handle, buf []byte) status {
	return status(C.jsmi_get_gpu_metrics_info(b.l, C.uintptr_t(h), ptr(buf)))
}

func (b *cBinding) close() status {
	if b.l == nil {
		return statusSuccess
	}
	st := status(C.jsmi_shut_down(b.l))
	C.jsmi_close(b.l)
	b.l = nil
	return st
}
