package main

import (
	"bytes"
	"fmt"
	"html/template"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// The HTML report: one self-contained page (inline SVG and CSS, no script,
// nothing fetched) beside the JSON report, with the run's charts: lag p99
// per derivation second by second, the achieved write rate against the
// target, the writer's latency, and the step search to the knee.

// Colours: one per derivation (in kinds' order), then the other charts'.
var kindColors = map[string]string{
	kindCombined: "#1f77b4", kindCompatibility: "#ff7f0e", kindActivity: "#2ca02c", kindCounts: "#d62728",
	kindCookingCounts: "#9467bd", kindNotification: "#8c564b", kindEmail: "#e377c2", kindEvent: "#17becf",
}

// soakColors are the soak chart's, a program each.
var soakColors = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#7f7f7f", "#9467bd"}

const (
	colorAchieved = "#0b7a75"
	colorTarget   = "#7f7f7f"
	colorP50      = "#3b5bdb"
	colorP99      = "#e8590c"
	colorPass     = "#2f9e44"
	colorFail     = "#c92a2a"
)

// htmlPath is the HTML report's path beside the JSON one.
func htmlPath(jsonPath string) string {
	return strings.TrimSuffix(jsonPath, filepath.Ext(jsonPath)) + ".html"
}

// writeHTML writes rep as the HTML report at path.
func writeHTML(path string, rep *Report) error {
	var b bytes.Buffer
	if err := rep.html(&b); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

type point struct{ x, y float64 }

type series struct {
	name, color string
	dashed      bool
	points      []point
}

// chart is a line chart (or, with bars, a bar chart over categories).
type chart struct {
	title, xLabel, yLabel string
	series                []series
	// vlines mark phase starts (x, label); hline a threshold (y, label).
	vlines []point
	vtext  []string
	hline  float64
	htext  string
	// logY draws the y axis in powers of ten (lags span milliseconds to
	// tens of seconds).
	logY bool
	// bars: one per category, with its colour and label.
	bars      []float64
	barColors []string
	barLabels []string
}

const (
	chartW, chartH               = 1100.0, 320.0
	padL, padR, padT, padB       = 70.0, 170.0, 36.0, 48.0
	plotW, plotH                 = chartW - padL - padR, chartH - padT - padB
	strokeWidth                  = 3
	legendRow                    = 20.0
	tickCount                    = 5
	minYMax                      = 1.0
	barGap                       = 0.3
	emptyNote                    = "no data"
	thresholdColor               = "#495057"
	gridColor                    = "#e9ecef"
	axisColor                    = "#868e96"
	fontFamily                   = "system-ui, sans-serif"
	svgOpen                      = `<svg class="chart" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="%s">`
	textStyle                    = `font-family="` + fontFamily + `" font-size="12" fill="#343a40"`
	legendSwatchW, legendSwatchH = 14.0, 4.0
)

// labelSlant is the angle, in degrees, of bar labels too wide for their
// bar (steeper when the first would not fit at it).
const labelSlant = 35.0

// labelWidth estimates the width of a label in the charts' 12 px
// sans-serif font: 7 px a character, a generous average (digits and
// capitals are wider than lower case), so that an estimate errs wide.
func labelWidth(l string) float64 { return 7 * float64(utf8.RuneCountInString(l)) }

// niceMax rounds v up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 {
		return minYMax
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// svg renders c.
func (c chart) svg() template.HTML {
	var b strings.Builder
	esc := template.HTMLEscapeString
	// Bar labels wider than their bar are drawn slanted (labelSlant), in
	// parallel, and the chart grows to hold the longest one.
	slot := plotW / max(float64(len(c.bars)), 1)
	slanted := false
	longest := 0.0
	for _, l := range c.barLabels {
		longest = max(longest, labelWidth(l))
	}
	if longest > slot*(1-barGap/2) {
		slanted = true
	}
	height, slant := chartH, labelSlant
	if slanted {
		// steeper when the first label would pass the chart's left edge
		if reach := padL + slot/2 - 4; longest*math.Cos(slant*math.Pi/180) > reach {
			slant = math.Acos(reach/longest) * 180 / math.Pi
		}
		height += longest * math.Sin(slant*math.Pi/180)
	}
	fmt.Fprintf(&b, svgOpen, chartW, height, chartW, height, esc(c.title))
	fmt.Fprintf(&b, `<text x="%.0f" y="20" %s font-size="15" font-weight="600">%s</text>`, padL, textStyle, esc(c.title))
	xMax, yMax := 0.0, c.hline
	for _, s := range c.series {
		for _, p := range s.points {
			xMax, yMax = max(xMax, p.x), max(yMax, p.y)
		}
	}
	for _, v := range c.bars {
		yMax = max(yMax, v)
	}
	if len(c.bars) > 0 {
		xMax = float64(len(c.bars))
	}
	xMax, yMax = max(xMax, 1), niceMax(yMax*1.05)
	x := func(v float64) float64 { return padL + v/xMax*plotW }
	y := func(v float64) float64 { return padT + plotH - min(v, yMax)/yMax*plotH }
	yTicks := ticks(yMax)
	if c.logY {
		lo, hi := 1.0, math.Ceil(math.Log10(max(yMax, 10)))
		y = func(v float64) float64 {
			return padT + plotH - (min(max(math.Log10(max(v, 10)), lo), hi)-lo)/(hi-lo)*plotH
		}
		yTicks = nil
		for e := lo; e <= hi; e++ {
			yTicks = append(yTicks, math.Pow(10, e))
		}
	}
	// grid and y ticks
	for _, v := range yTicks {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, padL, padL+plotW, y(v), y(v), gridColor)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" %s text-anchor="end">%s</text>`, padL-6, y(v)+4, textStyle, trimFloat(v))
	}
	base := padT + plotH
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, padL, padL+plotW, base, base, axisColor)
	fmt.Fprintf(&b, `<text x="14" y="%.1f" %s transform="rotate(-90 14 %.1f)" text-anchor="middle">%s</text>`, padT+plotH/2, textStyle, padT+plotH/2, esc(c.yLabel))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" %s text-anchor="middle">%s</text>`, padL+plotW/2, height-8, textStyle, esc(c.xLabel))
	if len(c.bars) == 0 {
		for _, v := range ticks(xMax) {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" %s text-anchor="middle">%s</text>`, x(v), base+16, textStyle, trimFloat(v))
		}
	}
	for i, v := range c.vlines {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="4 4"/>`, x(v.x), x(v.x), padT, padT+plotH, axisColor)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" %s>%s</text>`, x(v.x)+4, padT+12, textStyle, esc(c.vtext[i]))
	}
	// bars
	w := plotW / max(float64(len(c.bars)), 1)
	for i, v := range c.bars {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, padL+float64(i)*w+w*barGap/2, y(v), w*(1-barGap), base-y(v), c.barColors[i])
		if lx, ly := padL+float64(i)*w+w/2, base+16; slanted {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" %s text-anchor="end" transform="rotate(-%.1f %.1f %.1f)">%s</text>`, lx, ly, textStyle, slant, lx, ly, esc(c.barLabels[i]))
		} else {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" %s text-anchor="middle">%s</text>`, lx, ly, textStyle, esc(c.barLabels[i]))
		}
	}
	// lines
	for _, s := range c.series {
		if len(s.points) == 0 {
			continue
		}
		pts := make([]string, len(s.points))
		for i, p := range s.points {
			pts[i] = fmt.Sprintf("%.1f,%.1f", x(p.x), y(p.y))
		}
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="8 5"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="%d" stroke-linejoin="round"%s points="%s"><title>%s</title></polyline>`,
			s.color, strokeWidth, dash, strings.Join(pts, " "), esc(s.name))
	}
	if c.htext != "" {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="2 3"/>`, padL, padL+plotW, y(c.hline), y(c.hline), thresholdColor)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" %s text-anchor="end">%s</text>`, padL+plotW, y(c.hline)-4, textStyle, esc(c.htext))
	}
	// legend
	ly := padT
	for _, s := range c.series {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.0f" height="%.0f" fill="%s"/>`, padL+plotW+16, ly+4, legendSwatchW, legendSwatchH, s.color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" %s>%s</text>`, padL+plotW+16+legendSwatchW+6, ly+10, textStyle, esc(s.name))
		ly += legendRow
	}
	if len(c.series) == 0 && len(c.bars) == 0 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" %s text-anchor="middle">%s</text>`, padL+plotW/2, padT+plotH/2, textStyle, emptyNote)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built from escaped text and numbers only
}

// ticks are round values from 0 to about limit, five or so.
func ticks(limit float64) []float64 {
	step := niceMax(limit / tickCount)
	var out []float64
	for v := 0.0; v <= limit*1.0001; v += step {
		out = append(out, v)
	}
	return out
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.1f", v)
	return strings.TrimSuffix(s, ".0")
}

// charts builds the report's charts, the phases laid end to end.
func (rep *Report) charts() []chart {
	lag := chart{title: "Lag p99 per derivation, second by second", xLabel: "seconds since the first phase began (a write counts in the second its answer came)", yLabel: "lag p99 (ms, log scale)", hline: 1000, htext: "1 s", logY: true}
	rate := chart{title: "Writes answered per second", xLabel: "seconds", yLabel: "writes/s"}
	lat := chart{title: "Writer latency, second by second", xLabel: "seconds", yLabel: "latency (ms)"}
	step := chart{title: "Step search to the knee: lag p99 by target rate", xLabel: "target writes/s (green: lag p99 ≤ 1 s with nothing missing)", yLabel: "lag p99 (ms, log scale)", hline: 1000, htext: "1 s", logY: true}
	byKind := map[string]*series{}
	achieved := series{name: "achieved", color: colorAchieved}
	target := series{name: "target", color: colorTarget, dashed: true}
	p50 := series{name: "p50", color: colorP50}
	p99 := series{name: "p99", color: colorP99}
	offset := 0.0
	for _, p := range rep.Phases {
		label := fmt.Sprintf("%.0f/s", p.TargetRate)
		for _, c := range []*chart{&lag, &rate, &lat} {
			c.vlines = append(c.vlines, point{x: offset})
			c.vtext = append(c.vtext, label)
		}
		for _, w := range p.Timeline {
			t := offset + w.T
			achieved.points = append(achieved.points, point{t, float64(w.Writes)})
			target.points = append(target.points, point{t, p.TargetRate})
			if w.Writes > 0 {
				p50.points = append(p50.points, point{t, w.WriterP50Ms})
				p99.points = append(p99.points, point{t, w.WriterP99Ms})
			}
			for k, v := range w.LagP99Ms {
				s := byKind[k]
				if s == nil {
					s = &series{name: k, color: kindColors[k]}
					if s.color == "" {
						s.color = "#000000"
					}
					byKind[k] = s
				}
				s.points = append(s.points, point{t, v})
			}
		}
		offset += float64(len(p.Timeline))
		ok := p.LagP99Ms <= 1000 && sum(p.Missing) == 0
		color := colorPass
		if !ok {
			color = colorFail
		}
		step.bars = append(step.bars, p.LagP99Ms)
		step.barColors = append(step.barColors, color)
		step.barLabels = append(step.barLabels, label)
	}
	for _, k := range kinds {
		if s := byKind[k]; s != nil {
			lag.series = append(lag.series, *s)
		}
	}
	var others []string // derivations the page has no colour for
	for k := range byKind {
		if !slices.Contains(kinds, k) {
			others = append(others, k)
		}
	}
	slices.Sort(others)
	for _, k := range others {
		lag.series = append(lag.series, *byKind[k])
	}
	if len(achieved.points) > 0 {
		rate.series = []series{achieved, target}
	}
	if len(p50.points) > 0 {
		lat.series = []series{p50, p99}
	}
	out := []chart{lag, rate, lat, step}
	if sk := rep.Soak; sk != nil && len(sk.Programs) > 0 {
		mem := chart{title: "Memory through the soak: each program's resident set", xLabel: "minutes", yLabel: "MB"}
		for i, p := range sk.Programs {
			sr := series{name: p.Program, color: soakColors[i%len(soakColors)], dashed: p.Program == ddbLocal}
			for _, m := range p.Samples {
				sr.points = append(sr.points, point{m.T / 60, m.RSSMB})
			}
			mem.series = append(mem.series, sr)
		}
		out = append(out, mem)
		// the resident set's anonymous part and the live heap: what a
		// program allocated, without its file-backed pages
		anon := chart{title: "Memory through the soak: what each program allocated (anonymous resident set, and live heap dashed)", xLabel: "minutes", yLabel: "MB"}
		for i, p := range sk.Programs {
			if !p.Split {
				continue
			}
			a := series{name: p.Program, color: soakColors[i%len(soakColors)]}
			h := series{name: p.Program + " live heap", color: soakColors[i%len(soakColors)], dashed: true}
			for _, m := range p.Samples {
				a.points = append(a.points, point{m.T / 60, m.AnonMB})
				h.points = append(h.points, point{m.T / 60, m.HeapMB})
			}
			anon.series = append(anon.series, a, h)
		}
		if len(anon.series) > 0 {
			out = append(out, anon)
		}
	}
	if sc := rep.Scale; sc != nil && len(sc.Keys) > 0 {
		keys := chart{title: fmt.Sprintf("The busiest partition keys at %.0f user writes/s, as a share of a partition's limit", sc.Target),
			xLabel: "key (red: over its limit at the target)", yLabel: "% of the limit", hline: 100, htext: "limit"}
		for _, l := range sc.Keys[:min(len(sc.Keys), 10)] {
			color := colorPass
			if l.Use >= 1 {
				color = colorFail
			}
			keys.bars = append(keys.bars, 100*l.Use)
			keys.barColors = append(keys.barColors, color)
			keys.barLabels = append(keys.barLabels, short(l.Where+" "+l.Pattern))
		}
		out = append(out, keys)
	}
	return out
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{"pct": func(v float64) float64 { return 100 * v }, "inv": func(v float64) float64 { return 1 / v }}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>make load: {{.Title}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:24px;color:#212529;max-width:1160px}
h1{font-size:22px;margin:0 0 4px} p.meta{color:#495057;margin:0 0 12px}
p.verdict{font-weight:600;padding:8px 12px;background:#f1f3f5;border-left:4px solid #495057}
table{border-collapse:collapse;margin:12px 0 24px;font-size:13px} th,td{padding:4px 10px;border-bottom:1px solid #dee2e6;text-align:right}
th:first-child,td:first-child{text-align:left} svg.chart{display:block;margin:8px 0 28px;background:#fff}
</style></head><body>
<h1>make load</h1>
<p class="meta">{{.Title}}</p>
<p class="verdict">{{.Verdict}}</p>
<table><tr><th>target/s</th><th>achieved/s</th><th>errors</th><th>writer p50</th><th>writer p99</th><th>lag p99</th><th>missing</th><th>CPU busy</th><th>DynamoDB Local cores</th><th>writer requests/write</th></tr>
{{range .Phases}}<tr><td>{{printf "%.0f" .TargetRate}}</td><td>{{printf "%.1f" .AchievedRate}}</td><td>{{.Errors}}</td><td>{{printf "%.0f ms" .WriterAll.P50Ms}}</td><td>{{printf "%.0f ms" .WriterAll.P99Ms}}</td><td>{{printf "%.0f ms" .LagP99Ms}}</td><td>{{.MissingTotal}}</td><td>{{printf "%.0f%%" .CPU.MachineBusyPercent}}</td><td>{{printf "%.2f" .CPU.DynamoDBLocalCores}}</td><td>{{printf "%.2f" .WriterRequestsPerWrite}}</td></tr>
{{end}}</table>
{{range .Charts}}{{.}}
{{end}}
{{with .Routes}}<h2 style="font-size:16px">The writer's DynamoDB use per write, by route, at {{$.RoutesRate}} writes/s</h2>
<p class="meta">Capacity units as DynamoDB Local reports them, transactions priced at AWS's rates; the minimum is the design's (cmd/loadgen/minimum.go).</p>
<table><tr><th>route</th><th>writes</th><th>requests</th><th>RCU</th><th>WCU</th><th>minimum RCU + WCU</th><th>ratio</th></tr>
{{range .}}<tr><td>{{.Route}}</td><td>{{.Writes}}</td><td>{{printf "%.2f" .RequestsPerWrite}}</td><td>{{printf "%.2f" .ReadUnitsPerWrite}}</td><td>{{printf "%.2f" .WriteUnitsPerWrite}}</td><td>{{with .Minimum}}{{.Read}} + {{.Write}}{{else}}-{{end}}</td><td>{{if .Ratio}}{{printf "%.2f" .Ratio}}{{else}}-{{end}}</td></tr>
{{end}}</table>{{end}}
{{with .Scale}}<h2 style="font-size:16px">Partition keys at {{printf "%.0f" .Target}} user writes/s</h2>
<p class="meta">Projected from the phase at {{printf "%.0f" .BasisTarget}}/s ({{printf "%.1f" .BasisRate}} achieved; {{.KeysSeen}} keys): a key per room, user or recipe keeps its rate (more of them, each as busy), a key per month, week, item type or method, and a key the workload pins, takes the growth. Limits per key: 1,000 write and 3,000 read units a second.</p>
<p class="verdict">{{$.ScaleLine}}</p>
{{range .Advice}}<p class="meta">Advice: {{.Setting}}={{.Shards}} — {{.Where}} {{.Key}} takes {{printf "%.0f%%" (pct .Use)}} of a key's limit (its {{.Current}} shard(s) together); a record's shard is picked by {{.SpreadBy}}.</p>
{{end}}<table><tr><th>where</th><th>key</th><th>pattern</th><th>one per</th><th>WCU/s now</th><th>RCU/s now</th><th>WCU/s then</th><th>RCU/s then</th><th>of limit</th><th>breaks at</th></tr>
{{range .Keys}}<tr><td>{{.Where}}</td><td>{{.Key}}</td><td>{{.Pattern}}</td><td>{{if .Pinned}}{{.Pinned}}{{else}}{{.Per}}{{end}}</td><td>{{printf "%.1f" .Write}}</td><td>{{printf "%.1f" .Read}}</td><td>{{printf "%.0f" .ProjectedWrite}}</td><td>{{printf "%.0f" .ProjectedRead}}</td><td>{{printf "%.0f%%" (pct .Use)}}</td><td>{{if .BreaksAt}}{{printf "%.0f/s" .BreaksAt}}{{else}}never{{end}}</td></tr>
{{end}}</table>{{end}}
{{with .AWSLimits}}<h2 style="font-size:16px">DynamoDB's limits at {{.Limits}}</h2>
<p class="meta">The programs called DynamoDB Local through a ddblocal.Limiter (-aws-limits; the set-up at AWS's own limits): {{.Requests}} requests; {{.StreamLimited}} GetRecords calls refused. The keys that met a limit in {{$.AWSLimitsWhen}}, most throttled first; a key that takes the growth is one whose rate grows with the write rate (one key for all, or pinned by the workload).</p>
<p class="verdict">{{$.AWSLimitsLine}}</p>
{{with $.AWSSteadyLine}}<p class="verdict">{{.}}</p>{{end}}
<table><tr><th>table</th><th>index</th><th>key</th><th>operation</th><th>requests</th><th>throttled</th><th>share</th><th>unprocessed</th><th>conflicts</th><th>one per</th><th>takes the growth</th></tr>
{{range $.AWSLimitsKeys}}<tr><td>{{.Table}}</td><td>{{.Index}}</td><td>{{.Key}}</td><td>{{.Op}}{{with .App}} (app/{{.}}){{end}}</td><td>{{.Requests}}</td><td>{{.Throttled}}</td><td>{{printf "%.1f%%" (pct .ThrottledShare)}}</td><td>{{.Unprocessed}}</td><td>{{.Conflicts}}</td><td>{{.Per}}</td><td>{{if .TakesGrowth}}yes{{end}}</td></tr>
{{end}}</table>
{{with .Cadence}}<p class="meta">Set by the polls, not the writes (app/drain: the projector's drains, their nudges and top-10 checks): their rate is the same at full scale, where each key takes {{printf "%.0f" (inv $.AWSLimits.Scale)}} times the units it takes here.</p>
<table><tr><th>table</th><th>index</th><th>key</th><th>operation</th><th>requests/s (here and at full scale)</th><th>throttled here</th><th>share</th><th>one per</th></tr>
{{range .}}<tr><td>{{.Table}}</td><td>{{.Index}}</td><td>{{.Key}}</td><td>{{.Op}}</td><td>{{printf "%.1f" .PerSecond}}</td><td>{{.Throttled}}</td><td>{{printf "%.1f%%" (pct .ThrottledShare)}}</td><td>{{.Per}}</td></tr>
{{end}}</table>{{end}}{{end}}
{{with .Cost}}<h2 style="font-size:16px">The bill per million user writes on AWS</h2>
<p class="meta">Measured in the phase at {{printf "%.0f" .Phase}}/s; on-demand prices of {{.Prices.Region}} on {{.Prices.Date}} (cmd/loadgen/prices.json, or a file of your region's with -prices).</p>
<p class="verdict">{{$.CostLine}}</p>
<table><tr><th>line</th><th>unit</th><th>per write</th><th>minimum per write</th><th>cost</th><th>minimum cost</th><th>what</th></tr>
{{range .Lines}}<tr><td>{{.Name}}</td><td>{{.Unit}}</td><td>{{printf "%.3f" .PerWrite}}</td><td>{{printf "%.3f" .MinimumPerWrite}}</td><td>{{printf "$%.2f" .Cost}}</td><td>{{printf "$%.2f" .MinimumCost}}</td><td style="text-align:left">{{.Note}}</td></tr>
{{end}}</table>{{end}}
</body></html>
`))

// routeRow is a route's cost as the page's table shows it.
type routeRow struct {
	Route string
	RouteCost
}

// phaseRow is a phase as the page's table shows it.
type phaseRow struct {
	PhaseReport
	MissingTotal int
}

// html writes the report's page.
func (rep *Report) html(w *bytes.Buffer) error {
	data := struct {
		Title, Verdict string
		Phases         []phaseRow
		Charts         []template.HTML
		Routes         []routeRow
		RoutesRate     string
		Scale          *Scale
		ScaleLine      string
		Cost           *Bill
		CostLine       string
		AWSLimits      *AWSLimitsReport
		AWSLimitsLine  string
		AWSSteadyLine  string
		AWSLimitsKeys  []LimitKey
		AWSLimitsWhen  string
	}{
		Title: fmt.Sprintf("started %s · %d CPUs, %s, %s · DynamoDB Local raw PutItem rate %.0f writes/s",
			rep.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC"), rep.Machine.CPUs, rep.Machine.OS, rep.Machine.Go, rep.DynamoDBLocalWritesPerSec),
		Verdict: rep.verdict(),
		Scale:   rep.Scale,
	}
	if rep.Scale != nil {
		data.ScaleLine = rep.Scale.line()
	}
	if rep.Cost != nil {
		data.Cost, data.CostLine = rep.Cost, rep.Cost.line()
	}
	if a := rep.AWSLimits; a != nil {
		data.AWSLimits, data.AWSLimitsLine, data.AWSSteadyLine = a, a.line(), a.steadyLine()
		data.AWSLimitsKeys, data.AWSLimitsWhen = a.Keys, "the whole run"
		if a.Measured {
			data.AWSLimitsKeys, data.AWSLimitsWhen = a.Steady, "the measured phases"
		}
	}
	for _, p := range rep.Phases {
		data.Phases = append(data.Phases, phaseRow{p, sum(p.Missing)})
	}
	if len(rep.Phases) > 0 {
		// the costs at the knee (past it the writer is queueing), else of
		// the last phase
		at := rep.Phases[len(rep.Phases)-1]
		for _, p := range rep.Phases {
			if p.TargetRate == rep.Knee {
				at = p
			}
		}
		data.RoutesRate = fmt.Sprintf("%.0f", at.TargetRate)
		for _, r := range slices.Sorted(maps.Keys(at.WriterByRoute)) {
			data.Routes = append(data.Routes, routeRow{r, at.WriterByRoute[r]})
		}
	}
	for _, c := range rep.charts() {
		data.Charts = append(data.Charts, c.svg())
	}
	return page.Execute(w, data)
}
