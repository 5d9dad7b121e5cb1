// Package page is the lab's pages, a room of their own: the course (GET
// / and /learn/NAME), which walks a learner up the ladder one rung a
// step on the rung's own code, and the lab (GET /lab), which races any
// locks, the whole ladder of flaws, and single requests. The app serves
// them (package handlers); their scripts call the race server's /race,
// /explore and /play through the load balancer. Nothing here imports the
// load tool or the checker: the pages are markup, styles and scripts,
// and the code they show is cut from the module's own files.
package page

import (
	"embed"
	"errors"
	"html/template"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/lockladder/lockladder"
	"github.com/lockladder/lockladder/internal/report"
	"github.com/lockladder/lockladder/lock"
)

// Config is what the pages say of the instance that serves them.
type Config struct {
	// Instance names the instance ("app2"), for the lab's header.
	Instance string
	// Rungs are the instance's rungs (what /strategies lists): the lab's
	// pickers, and a step's rung (its lease, whether it is available).
	Rungs func() []lock.Info
}

// Site serves the pages.
type Site struct{ cfg Config }

// New returns the pages for cfg.
func New(cfg Config) *Site {
	if cfg.Rungs == nil {
		cfg.Rungs = func() []lock.Info { return nil }
	}
	return &Site{cfg: cfg}
}

// ErrNoStep is Step's answer for a name that is no step of the course.
var ErrNoStep = errors.New("no such step of the course")

// Headers sets what every page answers with: HTML, and never inside
// another site's frame, where a visitor could be made to click its
// buttons (for browsers that send no Sec-Fetch-Dest to refuse the frame
// with).
func Headers(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'")
}

// Welcome writes the course's front door: what a lock is for here, and
// the button that starts step 1.
func (s *Site) Welcome(w io.Writer) error {
	c, err := built()
	if err != nil {
		return err
	}
	return pages.ExecuteTemplate(w, "welcome", struct{ Steps []StepView }{c})
}

// Step writes the step for lock name (ErrNoStep when there is none).
func (s *Site) Step(w io.Writer, name string) error {
	c, err := built()
	if err != nil {
		return err
	}
	for i := range c {
		if c[i].Lock == name {
			v := stepPage{Steps: c, StepView: c[i]}
			for _, r := range s.cfg.Rungs() {
				if r.Name == name {
					v.Rung = r
				}
			}
			v.Data = stepData{Lock: name, Scenario: v.Scenario, N: v.N, Total: len(c), Lease: v.Rung.Lease,
				Unavailable: v.Rung.Unavailable, Instance: s.cfg.Instance}
			for _, x := range c {
				v.Data.Steps = append(v.Data.Steps, x.Lock)
			}
			if v.NextStep != nil {
				v.Data.Next = v.NextStep.Lock
			}
			return pages.ExecuteTemplate(w, "step", v)
		}
	}
	return ErrNoStep
}

// Lab writes the lab: race any locks, the ladder of flaws, every race's
// table, one request at a time.
func (s *Site) Lab(w io.Writer) error {
	return lab.Execute(w, struct {
		Instance string
		Rungs    []lock.Info
	}{s.cfg.Instance, s.cfg.Rungs()})
}

//go:embed favicon.svg
var favicon []byte

// Favicon answers the pages' icon (for /favicon.ico too: an SVG every
// browser the lab supports draws).
func Favicon(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "max-age=86400")
	w.Write(favicon)
}

// StepView is a step as its page shows it.
type StepView struct {
	Step
	N        int // 1 for the first
	Listings []Listing
	// News and Nexts count the lines marked New and Next (Step.Diff).
	News, Nexts int
	// SourceNames are Sources in full.
	SourceNames []string
	PrevStep    *Step
	NextStep    *Step
	// FixLine is the line of the next step's code that Fix finds, in
	// FixFile.
	FixFile string
	FixLine *Line
}

// PrevN and NextN are the numbers of the steps before and after.
func (v StepView) PrevN() int { return v.N - 1 }
func (v StepView) NextN() int { return v.N + 1 }

// stepPage is what a step's template reads.
type stepPage struct {
	StepView
	Steps []StepView
	Rung  lock.Info
	Data  stepData
}

// stepData is what a step's scripts read (JSON in the page).
type stepData struct {
	Lock        string   `json:"lock"`
	Scenario    string   `json:"scenario"`
	N           int      `json:"n"`
	Total       int      `json:"total"`
	Next        string   `json:"next,omitempty"`
	Lease       bool     `json:"lease"`
	Unavailable string   `json:"unavailable,omitempty"`
	Instance    string   `json:"instance,omitempty"`
	Steps       []string `json:"steps"`
}

var (
	buildOnce sync.Once
	course    []StepView
	courseErr error
)

// built is the course cut from the source, once.
func built() ([]StepView, error) {
	buildOnce.Do(func() { course, courseErr = build(Course) })
	return course, courseErr
}

// build cuts each step's code, marks what changed from the step before
// and what the step after changes, and finds each fix's line.
func build(steps []Step) ([]StepView, error) {
	out := make([]StepView, len(steps))
	var errs []error
	for i, st := range steps {
		v := StepView{Step: st, N: i + 1}
		for _, c := range st.Cuts {
			l, err := cut(lockladder.Source, c)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			v.Listings = append(v.Listings, l)
		}
		for _, k := range st.Sources {
			if name, ok := Sources[k]; ok {
				v.SourceNames = append(v.SourceNames, name)
			} else {
				errs = append(errs, errors.New("page: step "+st.Lock+": no source "+k))
			}
		}
		out[i] = v
	}
	for i := range out {
		if i > 0 {
			out[i].PrevStep = &steps[i-1]
			if steps[i].Diff {
				out[i].News = mark(out[i].Listings, out[i-1].Listings, false)
			}
		}
		if i+1 < len(out) {
			out[i].NextStep = &steps[i+1]
			if steps[i+1].Diff {
				out[i].Nexts = mark(out[i].Listings, out[i+1].Listings, true)
			}
			if fix := out[i].Fix; fix != "" {
				out[i].FixFile, out[i].FixLine = find(out[i+1].Listings, fix)
				if out[i].FixLine == nil {
					errs = append(errs, errors.New("page: step "+out[i].Lock+": no line of "+out[i+1].Lock+"'s code holds "+fix))
				}
			}
		}
	}
	return out, errors.Join(errs...)
}

// find is the first line of ls that holds text, and its file.
func find(ls []Listing, text string) (string, *Line) {
	for _, l := range ls {
		for i := range l.Lines {
			if strings.Contains(l.Lines[i].Text, text) {
				line := l.Lines[i]
				line.New, line.Next, line.Text = false, false, strings.TrimSpace(line.Text)
				return l.File, &line
			}
		}
	}
	return "", nil
}

// The pages' templates: the course's (course.html) and the lab's
// (lab.html), each with its styles and scripts inlined where it calls
// their template, so that a page is one request and works offline.
var (
	//go:embed course.html
	courseSrc string
	//go:embed lab.html
	labSrc string
	//go:embed common.css common.js charts.js explain.js course.css course.js course_why.js course_play.js
	//go:embed lab.css lab_ladder.css lab_explore.css lab_play.css
	//go:embed lab_race.js lab_charts.js lab_request.js lab_ladder.js lab_explore.js lab_play.js lab_predict.js
	assets embed.FS
)

var pages = parse("course", courseSrc)
var lab = parse("lab", labSrc)

// parse makes a page's template with every asset as a template of its
// own, named by its file, and the timeline's.
func parse(name, src string) *template.Template {
	t := template.New(name).Funcs(template.FuncMap{"sources": func() map[string]string { return Sources }})
	template.Must(t.Parse(src))
	report.TimelineTemplates(t)
	entries, err := assets.ReadDir(".")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		b, err := assets.ReadFile(e.Name())
		if err != nil {
			panic(err)
		}
		template.Must(t.New(e.Name()).Parse(string(b)))
	}
	return t
}
