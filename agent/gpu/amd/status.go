package amd

import (
	"errors"
	"fmt"
	"strconv"
)

// status is an amdsmi_status_t. The values are those of amdsmi.h in ROCm
// 6.0–7.x (unchanged across these releases for the codes below).
type status uint32

// amdsmi_status_t values the backend tells apart.
const (
	statusSuccess           status = 0
	statusInval             status = 1
	statusNotSupported      status = 2
	statusNotYetImplemented status = 3
	statusFailLoadModule    status = 4
	statusFailLoadSymbol    status = 5
	statusDRMError          status = 6
	statusAPIFailed         status = 7
	statusTimeout           status = 8
	statusRetry             status = 9
	statusNoPerm            status = 10
	statusInterrupt         status = 11
	statusIO                status = 12
	statusAddressFault      status = 13
	statusFileError         status = 14
	statusOutOfResources    status = 15
	statusInternalException status = 16
	statusInputOutOfBounds  status = 17
	statusInitError         status = 18
	statusRefcountOverflow  status = 19
	statusBusy              status = 30
	statusNotFound          status = 31
	statusNotInit           status = 32
	statusNoSlot            status = 33
	statusDriverNotLoaded   status = 34
	statusMoreData          status = 39
	statusNoData            status = 40
	statusInsufficientSize  status = 41
	statusUnexpectedSize    status = 42
	statusUnexpectedData    status = 43
	statusFileNotFound      status = 52
	statusArgPtrNull        status = 53
	statusMapError          status = 0xFFFFFFFE
	statusUnknownError      status = 0xFFFFFFFF

	// statusNoSymbol is not an amdsmi status: the binding returns it when
	// the library lacks the function (an older ROCm).
	statusNoSymbol status = 0xFFFF0001
)

var statusNames = map[status]string{
	statusSuccess:           "AMDSMI_STATUS_SUCCESS",
	statusInval:             "AMDSMI_STATUS_INVAL",
	statusNotSupported:      "AMDSMI_STATUS_NOT_SUPPORTED",
	statusNotYetImplemented: "AMDSMI_STATUS_NOT_YET_IMPLEMENTED",
	statusFailLoadModule:    "AMDSMI_STATUS_FAIL_LOAD_MODULE",
	statusFailLoadSymbol:    "AMDSMI_STATUS_FAIL_LOAD_SYMBOL",
	statusDRMError:          "AMDSMI_STATUS_DRM_ERROR",
	statusAPIFailed:         "AMDSMI_STATUS_API_FAILED",
	statusTimeout:           "AMDSMI_STATUS_TIMEOUT",
	statusRetry:             "AMDSMI_STATUS_RETRY",
	statusNoPerm:            "AMDSMI_STATUS_NO_PERM",
	statusInterrupt:         "AMDSMI_STATUS_INTERRUPT",
	statusIO:                "AMDSMI_STATUS_IO",
	statusAddressFault:      "AMDSMI_STATUS_ADDRESS_FAULT",
	statusFileError:         "AMDSMI_STATUS_FILE_ERROR",
	statusOutOfResources:    "AMDSMI_STATUS_OUT_OF_RESOURCES",
	statusInternalException: "AMDSMI_STATUS_INTERNAL_EXCEPTION",
	statusInputOutOfBounds:  "AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS",
	statusInitError:         "AMDSMI_STATUS_INIT_ERROR",
	statusRefcountOverflow:  "AMDSMI_STATUS_REFCOUNT_OVERFLOW",
	statusBusy:              "AMDSMI_STATUS_BUSY",
	statusNotFound:          "AMDSMI_STATUS_NOT_FOUND",
	statusNotInit:           "AMDSMI_STATUS_NOT_INIT",
	statusNoSlot:            "AMDSMI_STATUS_NO_SLOT",
	statusDriverNotLoaded:   "AMDSMI_STATUS_DRIVER_NOT_LOADED",
	statusMoreData:          "AMDSMI_STATUS_MORE_DATA",
	statusNoData:            "AMDSMI_STATUS_NO_DATA",
	statusInsufficientSize:  "AMDSMI_STATUS_INSUFFICIENT_SIZE",
	statusUnexpectedSize:    "AMDSMI_STATUS_UNEXPECTED_SIZE",
	statusUnexpectedData:    "AMDSMI_STATUS_UNEXPECTED_DATA",
	statusFileNotFound:      "AMDSMI_STATUS_FILE_NOT_FOUND",
	statusArgPtrNull:        "AMDSMI_STATUS_ARG_PTR_NULL",
	statusMapError:          "AMDSMI_STATUS_MAP_ERROR",
	statusUnknownError:      "AMDSMI_STATUS_UNKNOWN_ERROR",
	statusNoSymbol:          "function not in library",
}

func (s status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return "AMDSMI_STATUS_" + strconv.FormatUint(uint64(s), 10)
}

// unsupported reports whether s says the device or library cannot give
// this value at all: the field is missing, and that is not an error.
func (s status) unsupported() bool {
	switch s {
	case statusNotSupported, statusNotYetImplemented, statusNoSymbol, statusNoData,
		statusFileNotFound, statusNotFound:
		return true
	}
	return false
}

// errNotSupported is wrapped by the errors of calls that returned an
// "unsupported" status.
var errNotSupported = errors.New("not supported")

// callError is the error of one failed library call.
type callError struct {
	call   string
	status status
}

func (e *callError) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.call, e.status, uint32(e.status))
}

// Unwrap lets errors.Is(err, errNotSupported) tell unsupported values from
// failures.
func (e *callError) Unwrap() error {
	if e.status.unsupported() {
		return errNotSupported
	}
	return nil
}

// check returns nil for success and a *callError otherwise.
func check(call string, s status) error {
	if s == statusSuccess {
		return nil
	}
	return &callError{call: call, status: s}
}
