package contract

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A journal keeps a Recorder's sections in a file, so that they outlive
// the process that held them: a crashed instance (fault=crash is an exit,
// a kill a SIGKILL) takes its memory with it, and with it the evidence of
// the very flaw the crash stages. Each section costs two appends, one
// write(2) each on a file opened O_APPEND: one when it begins, one when
// it ends. Nothing is synced: a process that dies leaves its writes in
// the page cache, and only the host going down loses them. A section
// whose beginning is in the file and whose end is not was interrupted:
// its process died inside it (Section.Interrupted).
//
// The file holds one JSON record a line: a process's header
// {"p":START,"since":FILE_BEGUN} when it opens the file, {"p":START,
// "b":ID,"s":SECTION} when a section begins, {"p":START,"e":ID,
// "s":SECTION} when it ends. At maxJournal bytes it is renamed PATH.1
// (replacing the one before) and begun again, so an instance keeps at
// most twice that on disk.
type journal struct {
	mu    sync.RWMutex // writes share it; rotating takes it alone
	path  string
	f     *os.File
	size  atomic.Int64
	max   int64
	epoch int64 // this process's start, Unix ns: its records' "p"
	err   atomic.Pointer[error]
}

// maxJournal is the size at which a journal file is begun again: two of
// them hold some 50,000 sections at least.
const maxJournal = 16 << 20

type record struct {
	P     int64    `json:"p"`
	Since int64    `json:"since,omitempty"`
	Begin uint64   `json:"b,omitempty"`
	End   uint64   `json:"e,omitempty"`
	S     *Section `json:"s,omitempty"`
}

// OpenRecorder is NewRecorder(size) whose sections are also written to
// the file at path (created 0600 if missing), and first read back from
// it: those a process that used the file before held, the ones it died
// inside marked Interrupted. Close closes the file.
func OpenRecorder(size int, path string) (*Recorder, error) {
	r := NewRecorder(size)
	now := time.Now().UnixNano()
	j := &journal{path: path, max: maxJournal, epoch: now}
	began, err := j.load(r, now)
	if err != nil {
		return nil, err
	}
	if began > 0 {
		r.started = began // what the files hold is known from then
	}
	if err := j.open(); err != nil {
		return nil, err
	}
	r.j = j
	return r, nil
}

// Close closes the recorder's file, if it has one.
func (r *Recorder) Close() error {
	if r.j == nil {
		return nil
	}
	r.j.mu.Lock()
	defer r.j.mu.Unlock()
	return r.j.f.Close()
}

// JournalErr is the first error writing the recorder's file met (nil:
// none, or no file): the sections since are kept in memory only.
func (r *Recorder) JournalErr() error {
	if r.j == nil {
		return nil
	}
	if p := r.j.err.Load(); p != nil {
		return *p
	}
	return nil
}

// open opens the current file for appending and writes this process's
// header.
func (j *journal) open() error {
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("contract: sections journal: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("contract: sections journal: %w", err)
	}
	j.f = f
	j.size.Store(st.Size())
	h := record{P: j.epoch}
	if st.Size() == 0 {
		h.Since = time.Now().UnixNano()
	}
	line, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return j.write(append(line, '\n'))
}

// section writes the beginning (begin, its id) or the end (end) of s:
// the record's line is built by hand, as encoding/json would write it
// (json.Marshal's reflection would cost more than the write).
func (j *journal) section(begin, end uint64, s Section) {
	bp := lines.Get().(*[]byte)
	b := append((*bp)[:0], `{"p":`...)
	b = strconv.AppendInt(b, j.epoch, 10)
	if begin != 0 {
		b = append(b, `,"b":`...)
		b = strconv.AppendUint(b, begin, 10)
	} else {
		b = append(b, `,"e":`...)
		b = strconv.AppendUint(b, end, 10)
	}
	b = append(b, `,"s":{"instance":`...)
	b = appendString(b, s.Instance)
	b = append(b, `,"lock":`...)
	b = appendString(b, s.Lock)
	b = append(b, `,"key":`...)
	b = appendString(b, s.Key)
	for _, f := range []struct {
		name string
		v    int64
	}{{`,"token":`, s.Token}, {`,"acquired":`, s.Acquired}, {`,"released":`, s.Released}} {
		b = append(b, f.name...)
		b = strconv.AppendInt(b, f.v, 10)
	}
	b = append(b, `,"wrote":`...)
	b = strconv.AppendBool(b, s.Wrote)
	b = append(b, `,"refused":`...)
	b = strconv.AppendBool(b, s.Refused)
	b = append(b, "}}\n"...)
	j.append(b)
	*bp = b
	lines.Put(bp)
}

var lines = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// appendString appends s as a JSON string: quoted as it is when it is
// plain ASCII (the lab's names are), else as encoding/json writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// append writes one line, and begins the file again when it is full.
func (j *journal) append(line []byte) {
	j.mu.RLock()
	err := j.write(line)
	full := j.size.Load() >= j.max
	j.mu.RUnlock()
	if err == nil && full {
		err = j.rotate()
	}
	if err != nil {
		j.err.CompareAndSwap(nil, &err)
	}
}

// write writes a line with one write(2): O_APPEND keeps lines whole, and
// in the order they were written.
func (j *journal) write(line []byte) error {
	n, err := j.f.Write(line)
	j.size.Add(int64(n))
	return err
}

// rotate renames the full file PATH.1 and begins a new one.
func (j *journal) rotate() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.size.Load() < j.max {
		return nil // another writer did
	}
	j.f.Close()
	if err := os.Rename(j.path, j.path+".1"); err != nil {
		return fmt.Errorf("contract: sections journal: %w", err)
	}
	return j.open()
}

// load reads the files back into r, older first: the sections their
// records close, and those begun and never closed, Interrupted, ended at
// the start of the next process (the latest the crash can have come),
// or now. It returns when the older file was begun (0: no file).
func (j *journal) load(r *Recorder, now int64) (began int64, err error) {
	type open struct {
		p  int64
		id uint64
	}
	begun := map[open]Section{}
	var epochs []int64
	for _, path := range []string{j.path + ".1", j.path} {
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("contract: sections journal: %w", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var rec record
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue // a line cut short: skip it
			}
			switch {
			case rec.S != nil && rec.Begin != 0:
				begun[open{rec.P, rec.Begin}] = *rec.S
			case rec.S != nil && rec.End != 0:
				delete(begun, open{rec.P, rec.End})
				r.Add(*rec.S)
			case rec.S == nil:
				if began == 0 && rec.Since != 0 {
					began = rec.Since
				}
				epochs = append(epochs, rec.P)
			}
		}
		f.Close()
	}
	slices.Sort(epochs)
	var cut []Section
	for o, s := range begun {
		s.Interrupted, s.Released = true, now
		if i, _ := slices.BinarySearch(epochs, o.p+1); i < len(epochs) {
			s.Released = epochs[i] // the next process began
		}
		cut = append(cut, s)
	}
	slices.SortFunc(cut, func(a, b Section) int { return cmp.Compare(a.Acquired, b.Acquired) })
	for _, s := range cut {
		r.Add(s)
	}
	return began, nil
}
