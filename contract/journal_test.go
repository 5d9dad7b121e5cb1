package contract

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process killed inside a section leaves behind, in its journal, every
// section it closed and the one it was in: the next process to open the
// journal reads them back, the last one marked interrupted.
func TestJournalSurvivesSIGKILL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app1.sections")
	cmd := exec.Command(os.Args[0], "-test.run=^TestJournalHelperProcess$")
	cmd.Env = append(os.Environ(), "JOURNAL_HELPER="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The helper says "holding" once it has closed 3 sections and is
	// inside the fourth; then it is killed, as the stack's kill hook does.
	buf := make([]byte, 64)
	var said strings.Builder
	for !strings.Contains(said.String(), "holding") {
		n, err := out.Read(buf)
		if err != nil {
			t.Fatalf("helper said %q, then %v", said.String(), err)
		}
		said.Write(buf[:n])
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	restarted := time.Now().UnixNano()
	r, err := OpenRecorder(100, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := r.Since(0, 0)
	if len(p.Sections) != 4 {
		t.Fatalf("read back %d sections, want 3 closed and 1 interrupted: %+v", len(p.Sections), p.Sections)
	}
	for i, s := range p.Sections[:3] {
		if s.Interrupted || !s.Wrote || s.Token != int64(i+1) || s.Released <= s.Acquired {
			t.Errorf("section %d = %+v, want closed, wrote, token %d", i, s, i+1)
		}
	}
	cut := p.Sections[3]
	if !cut.Interrupted || cut.Wrote || cut.Key != "k" || cut.Instance != "app1" || cut.Released < restarted || cut.Acquired <= p.Sections[2].Released {
		t.Errorf("the section the kill cut = %+v, want interrupted, ended when the journal was opened again", cut)
	}
	if !r.Since(p.Sections[0].Acquired, 0).Complete {
		t.Error("the journal's sections are all there, yet the page says some were forgotten")
	}

	// The sections of this process join them, and a third process reads
	// all, the cut one still cut.
	r.Hold(Section{Instance: "app1", Key: "k", Acquired: time.Now().UnixNano()})(Section{Instance: "app1", Key: "k", Acquired: time.Now().UnixNano(), Released: time.Now().UnixNano(), Wrote: true})
	r.Close()
	again, err := OpenRecorder(100, path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if secs := again.Since(0, 0).Sections; len(secs) != 5 || !secs[3].Interrupted || secs[3].Released != cut.Released || secs[4].Interrupted {
		t.Fatalf("read back again: %+v", secs)
	}
}

// TestJournalHelperProcess is the process TestJournalSurvivesSIGKILL kills.
func TestJournalHelperProcess(t *testing.T) {
	path := os.Getenv("JOURNAL_HELPER")
	if path == "" {
		t.Skip("the helper of TestJournalSurvivesSIGKILL")
	}
	r, err := OpenRecorder(100, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 3; i++ {
		s := Section{Instance: "app1", Lock: "setnx", Key: "k", Token: i, Acquired: time.Now().UnixNano()}
		done := r.Hold(s)
		s.Released, s.Wrote = time.Now().UnixNano(), true
		done(s)
	}
	r.Hold(Section{Instance: "app1", Lock: "setnx", Key: "k", Acquired: time.Now().UnixNano()})
	os.Stdout.WriteString("holding\n")
	time.Sleep(time.Minute) // until killed
}

// A full journal is begun again beside the last one; both are read back.
func TestJournalRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	r, err := OpenRecorder(1000, path)
	if err != nil {
		t.Fatal(err)
	}
	r.j.max = 2000 // bytes: a few sections a file
	for i := int64(1); i <= 40; i++ {
		s := Section{Key: "k", Token: i, Acquired: i, Released: i}
		r.Hold(s)(s)
	}
	r.Close()
	for _, p := range []string{path, path + ".1"} {
		if st, err := os.Stat(p); err != nil || st.Size() > 2500 {
			t.Fatalf("%s: %v, %v: want a file under the bound", p, st, err)
		}
	}
	back, err := OpenRecorder(1000, path)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	secs := back.Since(0, 0).Sections
	if len(secs) == 0 || len(secs) >= 40 || secs[len(secs)-1].Token != 40 {
		t.Fatalf("read back %d sections, the last %+v: want the latest, not all 40", len(secs), secs[len(secs)-1:])
	}
	if back.Since(0, 0).Complete {
		t.Error("the rotated-away sections are forgotten: the page from 0 cannot be complete")
	}
	if err := back.JournalErr(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkHoldDoneJournal is BenchmarkHoldDone with the sections written
// to a journal, as the stack's instances keep them.
func BenchmarkHoldDoneJournal(b *testing.B) {
	r, err := OpenRecorder(1<<16, filepath.Join(b.TempDir(), "s"))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			done := r.Hold(Section{Instance: "app1", Lock: "lua", Key: "lock:{item}:stock", Acquired: 1776000000000000000})
			done(Section{Instance: "app1", Lock: "lua", Key: "lock:{item}:stock", Acquired: 1776000000000000000, Released: 1776000000001000000, Wrote: true})
		}
	})
}

func BenchmarkJournalWrite(b *testing.B) {
	r, err := OpenRecorder(1<<16, filepath.Join(b.TempDir(), "s"))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for range b.N {
		r.j.section(1, 0, Section{Instance: "app1", Lock: "lua", Key: "lock:{item}:stock", Acquired: 1776000000000000000})
	}
}
