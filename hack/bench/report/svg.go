package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"slices"
)

// Plot geometry, in SVG user units.
const (
	plotWidth  = 760
	plotHeight = 440
	plotLeft   = 70
	plotRight  = 200 // room for the legend
	plotTop    = 50
	plotBottom = 60
)

// series is one line of the plot.
type series struct {
	id, label, color string
	dashed           bool
	points           [][2]float64 // offered rate, latency ms
}

// latencySeries are p50 and p99 against the offered rate of the open-loop
// runs of each target, pipeguard first.
func latencySeries(runs []*Review) []series {
	var out []series
	for _, target := range []struct{ name, color string }{{"pipeguard", "#1f63b4"}, {"pipeguard-uncached", "#6a3d9a"}, {"baseline", "#d9711c"}} {
		for _, q := range []string{"p50", "p99"} {
			s := series{id: "series-" + target.name + "-" + q, label: target.name + " " + q, color: target.color, dashed: q == "p50"}
			for _, r := range runs {
				if r.Mode != "open" || r.Target != target.name {
					continue
				}
				v := r.P99
				if q == "p50" {
					v = r.P50
				}
				s.points = append(s.points, [2]float64{float64(r.Rate), v})
			}
			slices.SortStableFunc(s.points, func(a, b [2]float64) int { return int(a[0] - b[0]) })
			if len(s.points) > 0 {
				out = append(out, s)
			}
		}
	}
	return out
}

// latencySVG draws the open-loop latencies: p50 (dashed) and p99 (solid)
// of pipeguard and the baseline against the offered rate, both axes
// logarithmic, with the 2 ms p99 target.
func latencySVG(runs []*Review) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		plotWidth, plotHeight, plotWidth, plotHeight)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotWidth, plotHeight)
	text(&b, plotLeft, 24, "start", 15, "Webhook review latency against offered rate (open loop)")
	ss := latencySeries(runs)
	if len(ss) == 0 {
		text(&b, plotWidth/2, plotHeight/2, "middle", 13, "no open-loop runs")
		b.WriteString("</svg>\n")
		return b.Bytes()
	}
	var rates, lats []float64
	for _, s := range ss {
		for _, p := range s.points {
			rates = append(rates, p[0])
			lats = append(lats, max(p[1], 0.01))
		}
	}
	lats = append(lats, p99TargetMs)
	x0, x1 := math.Log10(slices.Min(rates)/1.3), math.Log10(slices.Max(rates)*1.3)
	y0, y1 := math.Floor(math.Log10(slices.Min(lats))), math.Ceil(math.Log10(slices.Max(lats)))
	if y1 <= y0 {
		y1 = y0 + 1
	}
	w, h := float64(plotWidth-plotLeft-plotRight), float64(plotHeight-plotTop-plotBottom)
	px := func(rate float64) float64 { return plotLeft + (math.Log10(rate)-x0)/(x1-x0)*w }
	py := func(ms float64) float64 { return plotTop + h - (math.Log10(max(ms, 0.01))-y0)/(y1-y0)*h }

	// Axes, grid and ticks.
	fmt.Fprintf(&b, `<g id="axes" stroke="#999" stroke-width="1">`+"\n")
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none"/>`+"\n", plotLeft, plotTop, w, h)
	for e := y0; e <= y1; e++ {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/>`+"\n", plotLeft, py(math.Pow(10, e)), plotLeft+w, py(math.Pow(10, e)))
	}
	ticks := slices.Compact(slices.Sorted(slices.Values(rates)))
	for _, r := range ticks {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.0f" stroke="#eee"/>`+"\n", px(r), plotTop, px(r), plotTop+h)
	}
	b.WriteString("</g>\n")
	for e := y0; e <= y1; e++ {
		text(&b, plotLeft-6, py(math.Pow(10, e))+4, "end", 12, axisLabel(math.Pow(10, e)))
	}
	for _, r := range ticks {
		text(&b, px(r), plotTop+h+18, "middle", 12, thousands(int(r)))
	}
	text(&b, plotLeft+w/2, plotHeight-16, "middle", 13, "offered rate (reviews/s)")
	fmt.Fprintf(&b, `<text x="18" y="%.1f" text-anchor="middle" font-size="13" transform="rotate(-90 18 %.1f)">latency (ms)</text>`+"\n",
		plotTop+h/2, plotTop+h/2)

	// The p99 target.
	ty := py(p99TargetMs)
	fmt.Fprintf(&b, `<g id="p99-target"><line x1="%d" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#2a9d3a" stroke-width="1" stroke-dasharray="2 3"/>`,
		plotLeft, ty, plotLeft+w, ty)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end" fill="#2a9d3a">p99 target %s ms</text></g>`+"\n", plotLeft+w-4, ty-4, trimFloat(p99TargetMs))

	// Series and legend.
	for i, s := range ss {
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<g id="%s" class="series" stroke="%s" fill="%s">`+"\n", s.id, s.color, s.color)
		fmt.Fprintf(&b, `<title>%s</title>`+"\n", escape(s.label))
		var path bytes.Buffer
		for j, p := range s.points {
			cmd := "L"
			if j == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, px(p[0]), py(p[1]))
		}
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke-width="2"%s/>`+"\n", bytes.TrimSpace(path.Bytes()), dash)
		for _, p := range s.points {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5"><title>%s at %s/s: %.3f ms</title></circle>`+"\n",
				px(p[0]), py(p[1]), escape(s.label), thousands(int(p[0])), p[1])
		}
		ly := float64(plotTop + 10 + 22*i)
		lx := float64(plotWidth - plotRight + 20)
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke-width="2"%s/>`+"\n", lx, ly, lx+30, ly, dash)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" stroke="none" fill="#222">%s</text>`+"\n", lx+38, ly+4, escape(s.label))
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func text(b *bytes.Buffer, x, y float64, anchor string, size int, s string) {
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%d">%s</text>`+"\n", x, y, anchor, size, escape(s))
}

func escape(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// axisLabel prints a power of ten: 0.1, 1, 10, 1,000.
func axisLabel(v float64) string {
	if v >= 1 {
		return thousands(int(math.Round(v)))
	}
	return trimFloat(v)
}

// trimFloat prints 0.01, 0.1, 1, 10… without trailing zeros.
func trimFloat(v float64) string { return fmt.Sprintf("%g", math.Round(v*1000)/1000) }
