package kubee2e

import (
	"bufio"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Pod start latency as the benchmarks of bench_test.go read it: per pod
// from the test's watch, and the kubelet's own SLI (its log lines and its
// histogram), which the test cross-checks.

// metricPodStartSLI is the kubelet's pod start SLI histogram: from the
// pod's creationTimestamp to the kubelet's watch seeing all its
// containers started, less image pulls and init containers; pods with a
// volume other than secret, config map, downward API, empty dir or
// projected ones are not observed.
const metricPodStartSLI = "kubelet_pod_start_sli_duration_seconds"

// percentile returns the p-th percentile (0 < p ≤ 100) of ds by the
// nearest-rank method: the smallest value at least p % of the values are
// at most (of 100 values, p99 is the 99th smallest; of 20, the largest).
// ds need not be sorted; it is not changed. It is 0 for no values.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// observedPodStart matches the kubelet's log line for a pod whose start
// it observed (pkg/kubelet/util/pod_startup_latency_tracker.go), the
// value its SLI histogram gets: `"Observed pod startup duration"
// pod="<namespace>/<name>" podStartSLOduration=<seconds>`.
var observedPodStart = regexp.MustCompile(`"Observed pod startup duration" pod="([^"]+)" podStartSLOduration=([-+.eE0-9]+)`)

// kubeletPodStarts returns, from a kubelet's log, the SLI durations it
// logged for the pods whose namespace/name starts with prefix, by
// namespace/name; a pod logged twice is an error.
func kubeletPodStarts(log, prefix string) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := observedPodStart.FindStringSubmatch(sc.Text())
		if m == nil || !strings.HasPrefix(m[1], prefix) {
			continue
		}
		s, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("kubelet log: pod %s: podStartSLOduration %q: %v", m[1], m[2], err)
		}
		if _, dup := out[m[1]]; dup {
			return nil, fmt.Errorf("kubelet log: pod %s's startup duration logged twice", m[1])
		}
		out[m[1]] = time.Duration(s * float64(time.Second))
	}
	return out, sc.Err()
}

// A histogram is a Prometheus histogram without labels as the text
// format exposes it: the cumulative count at each upper bound (+Inf
// included), the count and the sum.
type histogram struct {
	buckets    map[float64]float64
	count, sum float64
}

// parseHistogram reads histogram name (no labels) from a Prometheus text
// exposition. A histogram vector without observations yet has no series
// at all (the kubelet's SLI until a pod starts): a histogram not in the
// text is empty.
func parseHistogram(text, name string) (histogram, error) {
	h := histogram{buckets: map[float64]float64{}}
	for l := range strings.Lines(text) {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "#") {
			continue
		}
		series, value, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		bucket := strings.HasPrefix(series, name+`_bucket{le="`) && strings.HasSuffix(series, `"}`)
		if series != name+"_count" && series != name+"_sum" && !bucket {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return h, fmt.Errorf("%s: %q: %v", name, l, err)
		}
		switch {
		case series == name+"_count":
			h.count = v
		case series == name+"_sum":
			h.sum = v
		default:
			le, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(series, name+`_bucket{le="`), `"}`), 64)
			if err != nil {
				return h, fmt.Errorf("%s: %q: %v", name, l, err)
			}
			h.buckets[le] = v
		}
	}
	return h, nil
}

// sub returns h less an earlier scrape of the same histogram, before.
func (h histogram) sub(before histogram) histogram {
	d := histogram{buckets: map[float64]float64{}, count: h.count - before.count, sum: h.sum - before.sum}
	for le, c := range h.buckets {
		d.buckets[le] = c - before.buckets[le]
	}
	return d
}

// matches says whether the histogram h (a difference of two scrapes)
// holds exactly the observations ds: its count, every bucket's cumulative
// count, and its sum within a microsecond per observation; else it says
// the first difference.
func (h histogram) matches(ds []time.Duration) (bool, string) {
	if int(h.count) != len(ds) || h.count != math.Trunc(h.count) {
		return false, fmt.Sprintf("count %v, want %d", h.count, len(ds))
	}
	les := slices.Sorted(func(yield func(float64) bool) {
		for le := range h.buckets {
			if !yield(le) {
				return
			}
		}
	})
	for _, le := range les {
		n := 0
		for _, d := range ds {
			if d.Seconds() <= le {
				n++
			}
		}
		if int(h.buckets[le]) != n {
			return false, fmt.Sprintf("bucket le=%v counts %v, want %d", le, h.buckets[le], n)
		}
	}
	var sum float64
	for _, d := range ds {
		sum += d.Seconds()
	}
	if math.Abs(h.sum-sum) > 1e-6*float64(max(len(ds), 1)) {
		return false, fmt.Sprintf("sum %v s, want %v s", h.sum, sum)
	}
	return true, ""
}

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		var ds []time.Duration
		for _, v := range vs {
			ds = append(ds, time.Duration(v)*time.Millisecond)
		}
		return ds
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100, 99, ..., 1: not sorted
	}
	for _, c := range []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"none", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"100 values, p50 the 50th", ms(hundred...), 50, 50 * time.Millisecond},
		{"100 values, p99 the 99th", ms(hundred...), 99, 99 * time.Millisecond},
		{"100 values, p100 the largest", ms(hundred...), 100, 100 * time.Millisecond},
		{"20 values, p99 the largest", ms(hundred[80:]...), 99, 20 * time.Millisecond},
		{"20 values, p50 the 10th", ms(hundred[80:]...), 50, 10 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := slices.Clone(c.ds)
			if got := percentile(c.ds, c.p); got != c.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", c.ds, c.p, got, c.want)
			}
			if !slices.Equal(before, c.ds) {
				t.Errorf("percentile changed its input: %v, was %v", c.ds, before)
			}
		})
	}
}

// kubeletLog is a kubelet's log (klog's text format, as v1.37's kubelet
// writes it) with three pods' startup durations, one of another
// namespace, and unrelated lines.
const kubeletLog = `I1207 12:01:02.000001    4242 kubelet.go:2544] "SyncLoop ADD" source="api" pods=["ns1/web-5d8f-abcde"]
I1207 12:01:03.512345    4242 pod_startup_latency_tracker.go:144] "Observed pod startup duration" pod="ns1/web-5d8f-abcde" podStartSLOduration=1.5123 podStartE2EDuration="1.5123s" totalImagesPullingTime="0s" totalInitContainerRuntime="0s" isStatefulPod=false podCreationTimestamp="2026-12-07 12:01:02 +0000 UTC" imagePullSessionsCount=0 imagePullSessionsStartsCount=0 observedRunningTime="2026-12-07 12:01:03.4 +0000 UTC" watchObservedRunningTime="2026-12-07 12:01:03.5123 +0000 UTC"
I1207 12:01:03.612345    4242 pod_startup_latency_tracker.go:144] "Observed pod startup duration" pod="ns1/web-5d8f-fghij" podStartSLOduration=0.25 podStartE2EDuration="250ms"
I1207 12:01:04.000000    4242 pod_startup_latency_tracker.go:144] "Observed pod startup duration" pod="nrinet-system/nri-podnet-xyz" podStartSLOduration=3 podStartE2EDuration="3s"
`

func TestKubeletPodStarts(t *testing.T) {
	for _, c := range []struct {
		name, log, prefix string
		want              map[string]time.Duration
		err               string
	}{
		{"the namespace's pods", kubeletLog, "ns1/web-", map[string]time.Duration{
			"ns1/web-5d8f-abcde": 1512300 * time.Microsecond, "ns1/web-5d8f-fghij": 250 * time.Millisecond}, ""},
		{"another prefix", kubeletLog, "nrinet-system/", map[string]time.Duration{"nrinet-system/nri-podnet-xyz": 3 * time.Second}, ""},
		{"none", kubeletLog, "ns2/", map[string]time.Duration{}, ""},
		{"logged twice", kubeletLog + kubeletLog, "ns1/", nil, "ns1/web-5d8f-abcde's startup duration logged twice"},
		{"bad number", `"Observed pod startup duration" pod="ns1/a" podStartSLOduration=1.2.3`, "ns1/", nil, `podStartSLOduration "1.2.3"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := kubeletPodStarts(c.log, c.prefix)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// sliScrape is a kubelet's metrics text with the SLI histogram after
// n observations of 0.3 s and m of 1.5 s (its v1.37 buckets, shortened).
func sliScrape(n, m int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# HELP %s Duration in seconds to start a pod\n# TYPE %s histogram\n", metricPodStartSLI, metricPodStartSLI)
	for _, le := range []string{"0.5", "1", "2", "3", "+Inf"} {
		c := n
		if le != "0.5" && le != "1" {
			c += m
		}
		fmt.Fprintf(&b, "%s_bucket{le=%q} %d\n", metricPodStartSLI, le, c)
	}
	fmt.Fprintf(&b, "%s_sum %v\n%s_count %d\n", metricPodStartSLI, 0.3*float64(n)+1.5*float64(m), metricPodStartSLI, n+m)
	fmt.Fprintf(&b, "%s_bucket{le=\"1\"} 99\n", metricPodStartSLI+"_other")
	return b.String()
}

func TestHistogram_Matches(t *testing.T) {
	before, err := parseHistogram(sliScrape(1, 0), metricPodStartSLI)
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseHistogram(sliScrape(3, 2), metricPodStartSLI)
	if err != nil {
		t.Fatal(err)
	}
	d := after.sub(before)
	s := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	for _, c := range []struct {
		name string
		ds   []time.Duration
		ok   bool
		why  string
	}{
		{"the observations", []time.Duration{s(0.3), s(1.5), s(0.3), s(1.5)}, true, ""},
		{"one missing", []time.Duration{s(0.3), s(1.5), s(0.3)}, false, "count 4, want 3"},
		{"one in another bucket", []time.Duration{s(0.3), s(1.5), s(0.3), s(2.5)}, false, "bucket le=2 counts 4, want 3"},
		{"another sum", []time.Duration{s(0.3), s(1.5), s(0.4), s(1.5)}, false, "sum"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ok, why := d.matches(c.ds)
			if ok != c.ok || !strings.Contains(why, c.why) {
				t.Errorf("matches = %v, %q; want %v, %q", ok, why, c.ok, c.why)
			}
		})
	}
	empty, err := parseHistogram("# nothing\n", metricPodStartSLI)
	if err != nil {
		t.Fatalf("parseHistogram of text without the histogram: %v", err)
	}
	if ok, why := after.sub(empty).matches([]time.Duration{s(0.3), s(1.5), s(0.3), s(1.5), s(0.3)}); !ok {
		t.Errorf("a histogram less one not in the text: %s", why)
	}
	if _, err := parseHistogram(metricPodStartSLI+"_count x\n", metricPodStartSLI); err == nil {
		t.Error("parseHistogram of a count that is no number: no error")
	}
}
