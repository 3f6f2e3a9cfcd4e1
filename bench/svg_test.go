package bench

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

// layers is what `make bench` draws: seven layers and bwrap.
var layers = []Bar{
	{Label: "bare fork+exec", Median: 0.9, P10: 0.8, P90: 1.1},
	{Label: "namespaces only", Median: 2.1, P10: 1.9, P90: 2.6},
	{Label: "+mounts", Median: 9.5, P10: 8.8, P90: 11},
	{Label: "+Landlock", Median: 10.1, P10: 9.2, P90: 12},
	{Label: "+seccomp", Median: 12.3, P10: 11, P90: 14},
	{Label: "+cgroup", Median: 17.8, P10: 16, P90: 21},
	{Label: "full (tooljail run)", Median: 19.4, P10: 18, P90: 23},
	{Label: "bwrap <same mounts> & co", Median: 5.2, P10: 4.9, P90: 5.9, Reference: true},
}

type svgStats struct {
	root                string
	bars, refBars, text int
	titles              []string
	barWidths           []float64
}

// parseSVG decodes the whole document; any syntax error fails the test.
func parseSVG(t *testing.T, doc []byte) svgStats {
	t.Helper()
	var st svgStats
	d := xml.NewDecoder(bytes.NewReader(doc))
	depth := 0
	inBarTitle := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, doc)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 1 {
				st.root = e.Name.Local
				if e.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root namespace %q", e.Name.Space)
				}
			}
			if e.Name.Local == "text" {
				st.text++
			}
			if e.Name.Local == "title" {
				inBarTitle = true
			}
			if e.Name.Local == "rect" {
				for _, a := range e.Attr {
					if a.Name.Local != "class" {
						continue
					}
					classes := strings.Fields(a.Value)
					if len(classes) > 0 && classes[0] == "bar" {
						st.bars++
						if len(classes) == 2 && classes[1] == "ref" {
							st.refBars++
						}
						for _, w := range e.Attr {
							if w.Name.Local == "width" {
								f, err := strconv.ParseFloat(w.Value, 64)
								if err != nil {
									t.Errorf("bar width %q: %v", w.Value, err)
								}
								st.barWidths = append(st.barWidths, f)
							}
						}
					}
				}
			}
		case xml.EndElement:
			depth--
			if e.Name.Local == "title" {
				inBarTitle = false
			}
		case xml.CharData:
			if inBarTitle {
				st.titles = append(st.titles, string(e))
			}
		}
	}
	if depth != 0 {
		t.Fatalf("unbalanced elements (depth %d at EOF)", depth)
	}
	return st
}

func TestStartupSVGOneBarPerLayer(t *testing.T) {
	doc := StartupSVG("tooljail start-up by layer", []string{"2 cores, kernel 6.18 & <more>", "second line"}, layers)
	st := parseSVG(t, doc)
	if st.root != "svg" {
		t.Fatalf("root element %q, want svg", st.root)
	}
	if st.bars != len(layers) {
		t.Errorf("%d bars, want one per layer (%d)", st.bars, len(layers))
	}
	if st.refBars != 1 {
		t.Errorf("%d reference bars, want 1 (bwrap)", st.refBars)
	}
	if len(st.titles) != len(layers) || !strings.Contains(st.titles[7], "bwrap <same mounts> & co") {
		t.Errorf("bar titles %q: want one per bar, with the label unescaped back", st.titles)
	}
	// Bars are proportional to their medians.
	if len(st.barWidths) == len(layers) {
		for i, b := range layers {
			want := st.barWidths[6] * b.Median / layers[6].Median
			if math.Abs(st.barWidths[i]-want) > 0.2 {
				t.Errorf("bar %q width %.1f, want %.1f (proportional to the median)", b.Label, st.barWidths[i], want)
			}
		}
	}
	if !bytes.Contains(doc, []byte("19.4 ms")) {
		t.Errorf("the full run's median is not written on the chart")
	}
}

func TestStartupSVGMissingSamples(t *testing.T) {
	bars := []Bar{{Label: "ok", Median: 3, P10: 2, P90: 4}, {Label: "failed", Median: math.NaN(), P10: math.NaN(), P90: math.NaN()}}
	doc := StartupSVG("t", []string{"s"}, bars)
	st := parseSVG(t, doc)
	if st.bars != 2 {
		t.Fatalf("%d bars, want 2", st.bars)
	}
	if st.barWidths[1] != 0 {
		t.Errorf("a bar without samples has width %v, want 0", st.barWidths[1])
	}
	if !bytes.Contains(doc, []byte(">n/a<")) {
		t.Errorf("a bar without samples is not marked n/a")
	}
	if bytes.Contains(doc, []byte("NaN")) {
		t.Errorf("NaN leaked into the SVG")
	}
	// No bars at all is still a valid document.
	parseSVG(t, StartupSVG("empty", nil, nil))
}

func TestTickStep(t *testing.T) {
	for _, c := range []struct{ max, want float64 }{{30, 5}, {6, 1}, {100, 20}, {0.9, 0.2}, {0, 1}} {
		if got := tickStep(c.max); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("tickStep(%v) = %v, want %v", c.max, got, c.want)
		}
	}
}
