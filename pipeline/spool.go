package pipeline

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The spool is the write-ahead log of accepted calls. A receiver answers 2xx
// only after its calls are appended to the spool (and, under
// -spool-fsync=always, fsynced), so an acknowledged call survives a crash
// of the ingest process. The Batcher inserts calls in spool order and
// commits the spool position after ClickHouse acknowledged them; committed
// segments are deleted. On start the Batcher reads what is left, which
// ClickHouse may already hold in part: replays are harmless because the
// calls table collapses rows with the same identity.
//
// On disk, dir holds numbered segment files (00000000000000000001.wal, ...),
// a checkpoint file naming the committed position, and a LOCK file held
// with flock by the one process using the directory. A segment is a
// sequence of records: a 4-byte little-endian payload length, the CRC-32C
// of the payload, then the payload (spoolcodec.go). A torn record at the
// end of the last segment (a crash during a write) is cut off on open.

// FsyncPolicy says when the spool forces appended records to stable storage.
type FsyncPolicy string

// The fsync policies of -spool-fsync. Appended records survive a crash of
// the ingest process under every policy (they are in the kernel's page
// cache once write returns); the policy decides what a power loss or kernel
// crash can take.
const (
	// FsyncAlways fsyncs before the receiver answers: nothing acknowledged
	// is lost. Concurrent requests share one fsync (group commit).
	FsyncAlways FsyncPolicy = "always"
	// FsyncInterval fsyncs every -spool-fsync-interval: a power loss can
	// take the calls acknowledged in the last interval.
	FsyncInterval FsyncPolicy = "interval"
	// FsyncNever leaves writeback to the kernel (dirty pages are written
	// within about 30 s on Linux defaults).
	FsyncNever FsyncPolicy = "never"
)

// ParseFsyncPolicy parses always, interval or never.
func ParseFsyncPolicy(s string) (FsyncPolicy, error) {
	switch p := FsyncPolicy(s); p {
	case FsyncAlways, FsyncInterval, FsyncNever:
		return p, nil
	}
	return "", fmt.Errorf("fsync policy %q: want always, interval or never", s)
}

// SpoolConfig locates and bounds the spool.
type SpoolConfig struct {
	Dir          string        // -spool-dir
	Fsync        FsyncPolicy   // -spool-fsync
	FsyncEvery   time.Duration // -spool-fsync-interval, for FsyncInterval
	MaxBytes     int64         // -spool-max-bytes: bytes of uncommitted records at most
	SegmentBytes int64         // a segment is closed past this size; MaxBytes/8 (1 KiB..64 MiB) when 0
}

// ErrSpoolFull is returned by Batcher.Add when the spool has reached
// -spool-max-bytes or the disk is full. It wraps ErrBufferFull, so the
// receivers answer 503 with Retry-After and nothing of the request is
// accepted.
var ErrSpoolFull = fmt.Errorf("%w: disk spool full", ErrBufferFull)

// errDiskFull marks a write refused by the file system for lack of space.
var errDiskFull = fmt.Errorf("%w: no space left on the spool's file system", ErrSpoolFull)

// SpoolPos is a position in the spool: a segment number and a byte offset.
type SpoolPos struct {
	Seg uint64
	Off int64
}

func (p SpoolPos) before(q SpoolPos) bool {
	return p.Seg < q.Seg || p.Seg == q.Seg && p.Off < q.Off
}

const (
	recordHeader   = 8
	checkpointName = "checkpoint"
	lockName       = "LOCK"
	segmentSuffix  = ".wal"
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Spool is the on-disk write-ahead log. Append and Sync are safe for
// concurrent use; Read and Commit are called by the one Batcher goroutine.
type Spool struct {
	dir  string
	cfg  SpoolConfig
	m    *Metrics
	log  *slog.Logger
	lock *os.File
	// quiet leaves the gauges to another spool (openSpool).
	quiet bool

	mu        sync.Mutex
	seg       *os.File // segment being appended to
	head      SpoolPos // end of the last complete record
	segs      []segment
	bytes     int64 // all segments on disk
	committed SpoolPos
	closed    bool
	diskFull  bool                                    // the last write failed for lack of space
	write     func(f *os.File, b []byte) (int, error) // (*os.File).Write; tests inject failures
	fsync     func(f *os.File) error                  // (*os.File).Sync; tests inject failures and waits

	syncMu   sync.Mutex
	synced   SpoolPos
	lastSync time.Time

	rf    *os.File // reader: the segment being read
	rfSeg uint64
	rbuf  []byte
}

type segment struct {
	id   uint64
	size int64
}

// OpenSpool opens (creating it if needed) the spool in cfg.Dir, takes its
// lock, cuts off a torn record at its end and positions the reader at the
// last checkpoint. It fails when another process holds the directory.
func OpenSpool(cfg SpoolConfig, m *Metrics, log *slog.Logger) (*Spool, error) {
	return openSpool(cfg, m, log, false)
}

// openSpool is OpenSpool; a quiet spool (the pair log) leaves the spool's
// gauges to the main one, and counts its errors and fsyncs with it.
func openSpool(cfg SpoolConfig, m *Metrics, log *slog.Logger, quiet bool) (*Spool, error) {
	if cfg.Fsync == "" {
		cfg.Fsync = FsyncAlways
	}
	if cfg.FsyncEvery <= 0 {
		cfg.FsyncEvery = time.Second
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 1 << 30
	}
	if cfg.SegmentBytes <= 0 {
		cfg.SegmentBytes = min(max(cfg.MaxBytes/8, 1<<10), 64<<20)
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cfg.Dir, lockName), os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("spool %s is in use by another ingest process (flock: %w); give each process its own -spool-dir", cfg.Dir, err)
	}
	s := &Spool{dir: cfg.Dir, cfg: cfg, m: m, log: log, lock: lock, lastSync: time.Now(), quiet: quiet,
		write: func(f *os.File, b []byte) (int, error) { return f.Write(b) },
		fsync: (*os.File).Sync}
	if err := s.open(); err != nil {
		s.closeFiles()
		return nil, err
	}
	if !quiet {
		m.spoolCapacity.Set(float64(cfg.MaxBytes))
	}
	s.gauges()
	return s, nil
}

func (s *Spool) open() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	var ids []uint64
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), segmentSuffix)
		if !ok {
			continue
		}
		id, err := strconv.ParseUint(name, 10, 64)
		if err != nil || id == 0 {
			return fmt.Errorf("spool: unexpected file %s in %s", e.Name(), s.dir)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	s.committed = s.readCheckpoint()
	for len(ids) > 0 && ids[0] < s.committed.Seg {
		if err := os.Remove(s.segPath(ids[0])); err != nil {
			return fmt.Errorf("spool: remove committed segment: %w", err)
		}
		ids = ids[1:]
	}
	if len(ids) == 0 || ids[0] > s.committed.Seg {
		first := uint64(1)
		if len(ids) > 0 {
			first = ids[0]
		} else if s.committed.Seg > 0 {
			first = s.committed.Seg + 1
		}
		s.committed = SpoolPos{Seg: first}
	}
	for i, id := range ids {
		size, err := s.validate(id, i == len(ids)-1)
		if err != nil {
			return err
		}
		s.segs = append(s.segs, segment{id: id, size: size})
		s.bytes += size
	}
	if len(s.segs) == 0 {
		f, err := os.OpenFile(s.segPath(s.committed.Seg), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			return fmt.Errorf("spool: create segment: %w", err)
		}
		s.seg = f
		s.segs = []segment{{id: s.committed.Seg}}
	} else {
		last := s.segs[len(s.segs)-1]
		f, err := os.OpenFile(s.segPath(last.id), os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			return fmt.Errorf("spool: open segment: %w", err)
		}
		s.seg = f
	}
	last := s.segs[len(s.segs)-1]
	s.head = SpoolPos{Seg: last.id, Off: last.size}
	s.synced = s.head
	if seg := s.segmentSize(s.committed.Seg); s.committed.Off > seg {
		// The checkpoint outlived unsynced data (a power loss after the
		// Batcher committed records not yet fsynced). It is rewritten now,
		// durably: left as it was, the records appended from here would
		// lie under it, and a start after a crash before the next commit
		// would read from inside one of them and skip the rest of the
		// segment (TestSpoolCheckpointPastAPowerLossIsRewritten).
		s.committed.Off = seg
		if err := s.writeCheckpoint(s.committed, true); err != nil {
			return err
		}
	}
	return nil
}

// validate scans segment id and returns the length of its valid prefix. A
// torn or corrupt record ends the segment: the last segment is truncated
// there (a crash during a write); in an earlier one the rest is counted as
// lost and skipped.
func (s *Spool) validate(id uint64, last bool) (int64, error) {
	path := s.segPath(id)
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("spool: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("spool: %w", err)
	}
	var off int64
	var buf []byte
	for off < st.Size() {
		p, err := readRecordAt(f, off, &buf, s.cfg.MaxBytes)
		if err != nil {
			s.log.Warn("spool: corrupt or torn record; cutting the segment there",
				"segment", path, "offset", off, "size", st.Size(), "err", err)
			s.m.spoolErrors.WithLabelValues("corrupt").Inc()
			break
		}
		off += recordHeader + int64(len(p))
	}
	if off < st.Size() {
		if err := os.Truncate(path, off); err != nil {
			return 0, fmt.Errorf("spool: truncate torn segment: %w", err)
		}
		if !last {
			s.m.dropped.WithLabelValues("spool_corrupt").Inc()
		}
	}
	return off, nil
}

// readRecordAt reads the record at off into *buf and returns its payload.
func readRecordAt(f *os.File, off int64, buf *[]byte, maxBytes int64) ([]byte, error) {
	var h [recordHeader]byte
	if _, err := f.ReadAt(h[:], off); err != nil {
		return nil, fmt.Errorf("record header: %w", err)
	}
	n := int64(binary.LittleEndian.Uint32(h[:4]))
	if n == 0 || n > maxBytes {
		return nil, fmt.Errorf("record length %d out of range", n)
	}
	if int64(cap(*buf)) < n {
		*buf = make([]byte, n)
	}
	p := (*buf)[:n]
	if _, err := f.ReadAt(p, off+recordHeader); err != nil {
		return nil, fmt.Errorf("record payload: %w", err)
	}
	if crc32.Checksum(p, crcTable) != binary.LittleEndian.Uint32(h[4:]) {
		return nil, errors.New("record checksum mismatch")
	}
	return p, nil
}

func (s *Spool) segPath(id uint64) string {
	return filepath.Join(s.dir, fmt.Sprintf("%020d%s", id, segmentSuffix))
}

// segmentSize returns the size of segment id; mu must be held or the spool
// not yet shared.
func (s *Spool) segmentSize(id uint64) int64 {
	for _, g := range s.segs {
		if g.id == id {
			return g.size
		}
	}
	return 0
}

// Append writes one record and returns the head before it (prev) and where
// it ends. prev is the end of the record before it, in the previous segment
// when this record opened a new one: a reader that has read up to prev has
// read every record before this one. It fails with ErrSpoolFull when the
// record does not fit under MaxBytes or the disk is full; a partial write is
// cut off, so the spool stays a sequence of whole records. Append does not
// fsync: call Sync.
func (s *Spool) Append(payload []byte) (prev, end SpoolPos, err error) {
	return s.appendFramed(append(make([]byte, recordHeader, recordHeader+len(payload)), payload...))
}

// appendFramed is Append of rec[recordHeader:], with the record header
// written into rec[:recordHeader] in place, so that the payload is not
// copied. The spool keeps no reference to rec once it returns.
func (s *Spool) appendFramed(rec []byte) (prev, end SpoolPos, err error) {
	if len(rec) < recordHeader {
		return prev, end, fmt.Errorf("framed record of %d bytes has no room for its %d-byte header", len(rec), recordHeader)
	}
	payload := rec[recordHeader:]
	n := int64(len(rec))
	binary.LittleEndian.PutUint32(rec[:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(rec[4:], crc32.Checksum(payload, crcTable))

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return prev, end, errors.New("spool closed")
	}
	if p := s.pendingLocked(); p+n > s.cfg.MaxBytes {
		return prev, end, fmt.Errorf("%w (%d of %d bytes wait for ClickHouse, record of %d): wait for ClickHouse to catch up, or raise -spool-max-bytes",
			ErrSpoolFull, p, s.cfg.MaxBytes, n)
	}
	prev = s.head
	if s.head.Off > 0 && s.head.Off+n > s.cfg.SegmentBytes {
		if err := s.rotate(); err != nil {
			return prev, end, err
		}
	}
	w, err := s.write(s.seg, rec)
	if err != nil || w != len(rec) {
		if terr := s.seg.Truncate(s.head.Off); terr != nil {
			err = errors.Join(err, fmt.Errorf("cut partial record: %w", terr))
		}
		s.m.spoolErrors.WithLabelValues("write").Inc()
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG) {
			s.diskFull = true
			return prev, end, fmt.Errorf("%w (%s): free space, or move -spool-dir", errDiskFull, err)
		}
		if err == nil {
			err = io.ErrShortWrite
		}
		return prev, end, fmt.Errorf("write spool segment: %w", err)
	}
	s.diskFull = false
	s.head.Off += n
	s.bytes += n
	s.segs[len(s.segs)-1].size = s.head.Off
	s.gaugesLocked()
	return prev, s.head, nil
}

// pendingLocked returns the bytes of records not yet committed: MaxBytes
// bounds these. Only the segment holding the committed position can also
// hold committed records, so the disk holds at most MaxBytes plus one
// segment. mu must be held.
func (s *Spool) pendingLocked() int64 {
	p := s.bytes
	if len(s.segs) > 0 && s.segs[0].id == s.committed.Seg {
		p -= s.committed.Off
	}
	return p
}

// rotate starts a new segment; the old one is fsynced first unless the
// policy is never. mu must be held.
func (s *Spool) rotate() error {
	id := s.head.Seg + 1
	f, err := os.OpenFile(s.segPath(id), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		s.m.spoolErrors.WithLabelValues("write").Inc()
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return fmt.Errorf("%w (%s): free space, or move -spool-dir", errDiskFull, err)
		}
		return fmt.Errorf("spool: new segment: %w", err)
	}
	if s.cfg.Fsync != FsyncNever {
		if err := s.seg.Sync(); err != nil {
			f.Close()
			os.Remove(f.Name())
			s.m.spoolErrors.WithLabelValues("fsync").Inc()
			return fmt.Errorf("fsync spool segment: %w", err)
		}
		syncDir(s.dir)
	}
	s.seg.Close()
	s.seg = f
	s.head = SpoolPos{Seg: id}
	s.segs = append(s.segs, segment{id: id})
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// Sync makes every record up to upTo durable. Concurrent callers share one
// fsync: a caller whose records a finished fsync covered returns at once.
func (s *Spool) Sync(upTo SpoolPos) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if !s.synced.before(upTo) {
		return nil
	}
	s.mu.Lock()
	f, head := s.seg, s.head
	s.mu.Unlock()
	start := time.Now()
	err := s.fsync(f)
	if errors.Is(err, os.ErrClosed) {
		// Rotated meanwhile: rotate fsynced the whole segment.
		err = nil
	}
	if err != nil {
		s.m.spoolErrors.WithLabelValues("fsync").Inc()
		return fmt.Errorf("fsync spool segment: %w", err)
	}
	s.m.spoolFsync.Observe(time.Since(start).Seconds())
	s.synced, s.lastSync = head, time.Now()
	return nil
}

// syncDue fsyncs what was appended since the last fsync, if the interval
// passed; the Batcher calls it under FsyncInterval.
func (s *Spool) syncDue() error {
	s.syncMu.Lock()
	due := time.Since(s.lastSync) >= s.cfg.FsyncEvery
	s.syncMu.Unlock()
	if !due {
		return nil
	}
	return s.Sync(s.Head())
}

// Head returns the end of the last appended record.
func (s *Spool) Head() SpoolPos {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.head
}

// Committed returns the position up to which ClickHouse holds every call.
func (s *Spool) Committed() SpoolPos {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

// Bytes returns the size of the segments on disk.
func (s *Spool) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// Read calls fn with the records from from up to limit, in order, while
// fn returns true, and returns the position after the last record fn took.
// A record that cannot be read (disk corruption) is counted and skipped
// with the rest of its segment.
func (s *Spool) Read(from, limit SpoolPos, fn func(payload []byte, end SpoolPos) bool) (SpoolPos, error) {
	for from.before(limit) {
		s.mu.Lock()
		size := s.segmentSize(from.Seg)
		var next uint64
		for _, g := range s.segs {
			if g.id > from.Seg {
				next = g.id
				break
			}
		}
		s.mu.Unlock()
		if from.Seg == limit.Seg {
			size = limit.Off
		}
		if from.Off >= size {
			if next == 0 || from.Seg >= limit.Seg {
				return from, nil
			}
			from = SpoolPos{Seg: next}
			continue
		}
		if s.rf == nil || s.rfSeg != from.Seg {
			if s.rf != nil {
				s.rf.Close()
				s.rf = nil
			}
			f, err := os.Open(s.segPath(from.Seg))
			if err != nil {
				s.m.spoolErrors.WithLabelValues("read").Inc()
				return from, fmt.Errorf("spool: open segment for reading: %w", err)
			}
			s.rf, s.rfSeg = f, from.Seg
		}
		p, err := readRecordAt(s.rf, from.Off, &s.rbuf, s.cfg.MaxBytes)
		if err != nil {
			s.m.spoolErrors.WithLabelValues("corrupt").Inc()
			s.m.dropped.WithLabelValues("spool_corrupt").Inc()
			s.log.Error("spool: unreadable record; skipping the rest of its segment",
				"segment", s.segPath(from.Seg), "offset", from.Off, "err", err)
			from.Off = size
			continue
		}
		end := SpoolPos{Seg: from.Seg, Off: from.Off + recordHeader + int64(len(p))}
		if !fn(p, end) {
			return from, nil
		}
		from = end
	}
	return from, nil
}

// Commit records that ClickHouse holds every call up to pos: it writes the
// checkpoint and deletes segments wholly before pos. A checkpoint lost in a
// crash only makes the next start replay more, which is harmless.
func (s *Spool) Commit(pos SpoolPos) error {
	s.mu.Lock()
	if !s.committed.before(pos) {
		s.mu.Unlock()
		return nil
	}
	s.committed = pos
	// A fully consumed segment of a useful size is closed now, so that its
	// space comes back without waiting for more traffic; on a full disk,
	// whatever its size.
	var err error
	if pos == s.head && s.head.Off > 0 && (s.head.Off >= s.cfg.SegmentBytes/4 || s.diskFull) {
		err = s.rotate()
		if err == nil {
			s.committed = s.head
		}
	}
	var drop []uint64
	for len(s.segs) > 1 && s.segs[0].id < s.committed.Seg {
		drop = append(drop, s.segs[0].id)
		s.bytes -= s.segs[0].size
		s.segs = s.segs[1:]
	}
	committed := s.committed
	s.gaugesLocked()
	s.mu.Unlock()

	err = errors.Join(err, s.writeCheckpoint(committed, false))
	for _, id := range drop {
		if s.rf != nil && s.rfSeg == id {
			s.rf.Close()
			s.rf = nil
		}
		if rerr := os.Remove(s.segPath(id)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("spool: remove segment: %w", rerr))
		}
	}
	if err != nil {
		s.m.spoolErrors.WithLabelValues("checkpoint").Inc()
	}
	return err
}

// writeCheckpoint replaces the checkpoint with p; durable fsyncs it and
// the directory (a lost checkpoint only replays more, unless it is one
// that must not come back).
func (s *Spool) writeCheckpoint(p SpoolPos, durable bool) error {
	tmp := filepath.Join(s.dir, checkpointName+".tmp")
	body := fmt.Sprintf("mcplens-spool-checkpoint 1 %d %d\n", p.Seg, p.Off)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err == nil {
		_, err = f.WriteString(body)
		if err == nil && durable {
			err = f.Sync()
		}
		err = errors.Join(err, f.Close())
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(s.dir, checkpointName))
	}
	if err != nil {
		return fmt.Errorf("spool: write checkpoint: %w", err)
	}
	if durable {
		syncDir(s.dir)
	}
	return nil
}

// readCheckpoint returns the committed position, or the start when there
// is no readable checkpoint (the whole spool is then replayed).
func (s *Spool) readCheckpoint() SpoolPos {
	b, err := os.ReadFile(filepath.Join(s.dir, checkpointName))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("spool: unreadable checkpoint; replaying the whole spool", "err", err)
		}
		return SpoolPos{}
	}
	var p SpoolPos
	if _, err := fmt.Sscanf(string(b), "mcplens-spool-checkpoint 1 %d %d\n", &p.Seg, &p.Off); err != nil || p.Off < 0 {
		s.log.Warn("spool: malformed checkpoint; replaying the whole spool", "content", string(b))
		return SpoolPos{}
	}
	return p
}

// Close fsyncs (unless the policy is never), writes the checkpoint and
// releases the directory. Records not committed stay for the next start.
// Call it after the Batcher stopped; a second Close does nothing.
func (s *Spool) Close() error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil
	}
	var err error
	if s.cfg.Fsync != FsyncNever {
		err = s.Sync(s.Head())
	}
	s.mu.Lock()
	s.closed = true
	committed := s.committed
	s.mu.Unlock()
	err = errors.Join(err, s.writeCheckpoint(committed, false))
	s.closeFiles()
	return err
}

func (s *Spool) closeFiles() {
	if s.seg != nil {
		s.seg.Close()
	}
	if s.rf != nil {
		s.rf.Close()
	}
	if s.lock != nil {
		_ = syscall.Flock(int(s.lock.Fd()), syscall.LOCK_UN)
		s.lock.Close()
	}
}

func (s *Spool) gauges() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gaugesLocked()
}

func (s *Spool) gaugesLocked() {
	if s.quiet {
		return
	}
	s.m.spoolBytes.Set(float64(s.bytes))
	s.m.spoolPending.Set(float64(s.pendingLocked()))
	s.m.spoolSegments.Set(float64(len(s.segs)))
}
