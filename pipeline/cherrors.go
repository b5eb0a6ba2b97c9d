package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
)

// Server exception codes after which the same insert can succeed later:
// the server is overloaded, restarting, read-only for a while or out of a
// resource that comes back. Codes from ClickHouse's src/Common/ErrorCodes.cpp.
var retryableCodes = map[int32]string{
	3:   "UNEXPECTED_END_OF_FILE",
	32:  "ATTEMPT_TO_READ_AFTER_EOF",
	159: "TIMEOUT_EXCEEDED",
	164: "READONLY",
	173: "CANNOT_ALLOCATE_MEMORY",
	202: "TOO_MANY_SIMULTANEOUS_QUERIES",
	203: "NO_FREE_CONNECTION",
	209: "SOCKET_TIMEOUT",
	210: "NETWORK_ERROR",
	225: "NO_ZOOKEEPER",
	236: "ABORTED",
	241: "MEMORY_LIMIT_EXCEEDED",
	242: "TABLE_IS_READ_ONLY",
	243: "NOT_ENOUGH_SPACE",
	244: "UNEXPECTED_ZOOKEEPER_ERROR",
	252: "TOO_MANY_PARTS",
	279: "ALL_CONNECTION_TRIES_FAILED",
	285: "TOO_FEW_LIVE_REPLICAS",
	319: "UNKNOWN_STATUS_OF_INSERT",
	394: "QUERY_WAS_CANCELLED",
	425: "SYSTEM_ERROR",
	439: "CANNOT_SCHEDULE_TASK",
	999: "KEEPER_EXCEPTION",
}

// RowError is an insert that failed on one row before anything was sent:
// the driver could not convert the row's values to the column types. The
// other rows of the batch can still be inserted.
type RowError struct {
	Index int // position of the row in the batch
	Err   error
}

func (e *RowError) Error() string { return fmt.Sprintf("append row %d: %v", e.Index, e.Err) }
func (e *RowError) Unwrap() error { return e.Err }

// Retryable reports whether an insert that failed with err can succeed if
// it is sent again unchanged. Network errors, timeouts and the server
// exceptions of an overloaded or restarting server are retryable. The server
// refusing the rows themselves (an unknown column, a type mismatch, a parse
// error: any other exception code) and a row the driver cannot convert are
// not: sending them again gives the same answer, so they go to the
// dead_letters table with the reason. An error of unknown kind is treated
// as retryable, so that nothing accepted is dropped on a guess; the disk
// spool absorbs the wait.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var row *RowError
	if errors.As(err, &row) {
		return false
	}
	var ex *proto.Exception
	if errors.As(err, &ex) {
		_, ok := retryableCodes[ex.Code]
		return ok
	}
	// Network errors, io.EOF, timeouts, a connection pool that is
	// exhausted, and errors of unknown kind.
	return true
}

// errorKind is the bounded label under which an insert error is counted.
func errorKind(err error) string {
	var row *RowError
	var ex *proto.Exception
	var ne net.Error
	switch {
	case errors.As(err, &row):
		return "bad_row"
	case errors.As(err, &ex):
		if _, ok := retryableCodes[ex.Code]; ok {
			return "server_busy"
		}
		return "server_rejected"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "network"
	}
	return "other"
}
