// ptbench's Go peer: the same workloads against Go's runtime timers (Go
// 1.19: the per-P 4-ary heap with the ten-state status machine, the design
// ptimer ports), and, in sched.go, the workloads that ptbench runs inside
// its scheduler, as goroutines. Prints one JSON line per repetition in
// ptbench's peer format. Standard library only.
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	workload   = flag.String("workload", "rpc", "workload")
	threads    = flag.Int("threads", 1, "goroutines, and GOMAXPROCS")
	reps       = flag.Int("reps", 3, "repetitions")
	durationMs = flag.Int64("duration-ms", 300, "per repetition")
	opsLimit   = flag.Int64("ops", 0, "ops per goroutine instead of a duration")
	preload    = flag.Int("preload", 32768, "far-future timers per goroutine first")
	window     = flag.Int("window", 10000, "rpc-pending window")
	timeoutMs  = flag.Int64("timeout-ms", 100, "rpc, rpc-pending: each timer's timeout (plus up to 1 ms)")
	tickers    = flag.Int("tickers", 1000, "ticker: tickers in all")
	busy       = flag.Bool("busy", false, "keep every P busy (latency-busy)")
	memoryGs   = flag.Int64("gs", 100000, "memory-g: parked goroutines; spawn-burst: goroutines in the burst")
	timers     = flag.Int("timers", 1000000, "memory: pending timers")
	quantiles  = flag.String("quantiles", "", "comma-separated: also print lateness at these (lat_q_ns)")
)

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// wakeups: what emit reports as wake-ups, slack's only (0 elsewhere).
var wakeups int64

// nvcsw: every thread's voluntary context switches, slack's wake-ups.
func nvcsw() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Nvcsw
}

func sysSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Stime.Sec) + float64(ru.Stime.Usec)/1e6
}

// rss: resident memory less shared pages, as ptbench counts its own
// designs' (bench_rss_bytes); emit reports it right after a measured phase.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var pages, res, shared int64
	fmt.Sscan(string(b), &pages, &res, &shared)
	return (res - shared) * int64(os.Getpagesize())
}

type lat struct {
	mu sync.Mutex
	v  []int64
}

func (l *lat) add(ns int64) {
	l.mu.Lock()
	l.v = append(l.v, ns)
	l.mu.Unlock()
}

// sorted returns a sorted copy. A random-workload callback that began
// before its Stop may still be appending after the run: sorting l.v in
// place while an append moved it to a new array left an unsorted copy
// behind, read as a p999 above the maximum.
func (l *lat) sorted() []int64 {
	l.mu.Lock()
	v := append([]int64(nil), l.v...)
	l.mu.Unlock()
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v
}

// quantile of sorted values, at the rank ptbench's histogram uses.
func quantile(v []int64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return float64(v[int(p*float64(len(v)-1))])
}

type result struct {
	ops, scheduled, fired, cancelled, expected int64
	bytes, createNs, cancelNs                  float64
}

func noop() {}

func run(end time.Time, id int, res *result, late *lat, fired *int64) {
	r := rand.New(rand.NewSource(int64(id) + 1))
	// Fast loops look at the clock every 256 ops, sleeping ones every op.
	mask := int64(255)
	if *workload == "latency" || *workload == "latency-busy" {
		mask = 0
	}
	done := func(ops int64) bool {
		if *opsLimit > 0 {
			return ops >= *opsLimit
		}
		return ops&mask == 0 && time.Now().After(end)
	}
	var ops int64
	switch *workload {
	case "rpc":
		for ; !done(ops); ops++ {
			t := time.AfterFunc(time.Duration(*timeoutMs)*time.Millisecond+time.Duration(r.Int63n(1e6)), noop)
			t.Stop()
		}
	case "rpc-pending":
		ring := make([]*time.Timer, *window)
		for i := 0; !done(ops); i, ops = (i+1)%*window, ops+1 {
			if ring[i] != nil {
				ring[i].Stop()
			}
			ring[i] = time.AfterFunc(time.Duration(*timeoutMs)*time.Millisecond+time.Duration(r.Int63n(1e6)), noop)
		}
		for _, t := range ring {
			if t != nil {
				t.Stop()
			}
		}
	case "random":
		const R = 4096
		var ring [R]*time.Timer
		var keep []*time.Timer
		for ; !done(ops); ops++ {
			d := time.Millisecond + time.Duration(r.Int63n(int64(time.Second-time.Millisecond)))
			deadline := time.Now().Add(d)
			t := time.AfterFunc(d, func() {
				late.add(int64(time.Since(deadline)))
				atomic.AddInt64(fired, 1)
			})
			x := r.Int63()
			if x&1 == 1 {
				i := (x >> 1) % R
				if ring[i] != nil {
					ring[i].Stop()
				}
				ring[i] = t
			} else {
				keep = append(keep, t)
			}
		}
		for _, t := range ring {
			if t != nil {
				t.Stop()
			}
		}
		for _, t := range keep {
			t.Stop()
		}
	case "reset":
		const K = 1000
		ts := make([]*time.Timer, K)
		for k := range ts {
			ts[k] = time.AfterFunc(time.Second+time.Duration(r.Int63n(1e9)), noop)
		}
		for ; !done(ops); ops++ {
			ts[r.Intn(K)].Reset(time.Second + time.Duration(r.Int63n(1e9)))
		}
		for _, t := range ts {
			t.Stop()
		}
	case "latency", "latency-busy":
		for ; !done(ops); ops++ {
			d := 300*time.Microsecond + time.Duration(r.Int63n(700000))
			deadline := time.Now().Add(d)
			time.Sleep(d)
			late.add(int64(time.Since(deadline)))
			atomic.AddInt64(fired, 1)
		}
	case "ticker":
		n := *tickers / *threads
		if id < *tickers%*threads {
			n++
		}
		var wg sync.WaitGroup
		start := time.Now()
		for i := 0; i < n; i++ {
			period := time.Millisecond + time.Duration(r.Int63n(9e6))
			first := start.Add(period)
			if !first.After(end) {
				atomic.AddInt64(&res.expected, int64(end.Sub(first)/period)+1)
			}
			tk := time.NewTicker(period)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer tk.Stop()
				for {
					now := <-tk.C
					t := time.Now()
					if t.After(end) {
						return
					}
					_ = now
					k := t.Sub(first) / period
					due := first.Add(k * period)
					late.add(int64(t.Sub(due)))
					atomic.AddInt64(fired, 1)
				}
			}()
		}
		wg.Wait()
	case "slack":
		// 100 ms Tickers with random phases, a goroutine each, and a tenth
		// as many AfterFuncs over the run: Go has no window to give them.
		n := *tickers / *threads
		if id < *tickers%*threads {
			n++
		}
		period := 100 * time.Millisecond
		start := time.Now()
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			phase := time.Duration(r.Int63n(int64(period)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(phase)
				tk := time.NewTicker(period)
				defer tk.Stop()
				first := time.Now().Add(period)
				if !first.After(end) {
					atomic.AddInt64(&res.expected, int64(end.Sub(first)/period)+1)
				}
				for {
					<-tk.C
					t := time.Now()
					if t.After(end) {
						return
					}
					due := first.Add(t.Sub(first) / period * period)
					late.add(int64(t.Sub(due)))
					atomic.AddInt64(fired, 1)
				}
			}()
		}
		for i := 0; i < n/10; i++ {
			deadline := start.Add(time.Duration(r.Int63n(int64(end.Sub(start)))))
			atomic.AddInt64(&res.expected, 1)
			time.AfterFunc(deadline.Sub(time.Now()), func() {
				late.add(int64(time.Since(deadline)))
				atomic.AddInt64(fired, 1)
			})
		}
		wg.Wait()
	case "memory":
		N := *timers
		// The handle slice is the harness's: touched before the first reading.
		ts := make([]*time.Timer, N)
		for i := range ts {
			ts[i] = (*time.Timer)(nil)
		}
		runtime.GC()
		before := rss()
		a := time.Now()
		for i := range ts {
			ts[i] = time.AfterFunc(time.Hour+time.Duration(i), noop)
		}
		b := time.Now()
		after := rss()
		for _, t := range ts {
			t.Stop()
		}
		c := time.Now()
		res.bytes = float64(after-before) / float64(N)
		res.createNs = float64(b.Sub(a).Nanoseconds()) / float64(N)
		res.cancelNs = float64(c.Sub(b).Nanoseconds()) / float64(N)
		ops = int64(N)
	default:
		fmt.Fprintf(os.Stderr, "ptbench-go: no workload %s\n", *workload)
		os.Exit(2)
	}
	atomic.AddInt64(&res.ops, ops)
}

func main() {
	flag.Parse()
	runtime.GOMAXPROCS(*threads)
	if isSched(*workload) { // goroutines, not timers: sched.go
		for rep := 0; rep < *reps; rep++ {
			runSched()
		}
		return
	}
	for rep := 0; rep < *reps; rep++ {
		var res result
		var late lat
		var fired int64
		var pre [][]*time.Timer
		if *workload != "memory" {
			for g := 0; g < *threads; g++ {
				p := make([]*time.Timer, *preload)
				for i := range p {
					p[i] = time.AfterFunc(time.Hour+time.Duration(rand.Int63n(1e9)), noop)
				}
				pre = append(pre, p)
			}
		}
		var stop int32
		if *busy {
			for i := 0; i < runtime.NumCPU(); i++ {
				go func() {
					for atomic.LoadInt32(&stop) == 0 {
					}
				}()
			}
		}
		var wg sync.WaitGroup
		cpu0, csw0 := cpuSeconds(), nvcsw()
		start := time.Now()
		end := start.Add(time.Duration(*durationMs) * time.Millisecond)
		for g := 0; g < *threads; g++ {
			wg.Add(1)
			go func(id int) {
				defer wg.Done()
				run(end, id, &res, &late, &fired)
			}(g)
		}
		wg.Wait()
		elapsed := time.Since(start)
		cpu := cpuSeconds() - cpu0
		atomic.StoreInt32(&stop, 1)
		for _, p := range pre {
			for _, t := range p {
				t.Stop()
			}
		}
		if *workload == "ticker" || *workload == "slack" {
			res.ops = fired
		}
		wakeups = 0
		if *workload == "slack" {
			wakeups = nvcsw() - csw0
		}
		emit(res.ops, elapsed, cpu, late.sorted(), res.bytes, res.createNs, res.cancelNs,
			fired, res.expected, "")
	}
}

// emit prints one repetition as ptbench's peer JSON line; late is sorted,
// extra (",\"key\":value..." or "") carries a workload's own fields.
func emit(ops int64, elapsed time.Duration, cpu float64, v []int64, bytes, createNs, cancelNs float64,
	fired, expected int64, extra string) {
	max := 0.0
	if n := len(v); n > 0 {
		max = float64(v[n-1])
	}
	qs := ""
	if *quantiles != "" && len(v) > 0 {
		for i, f := range strings.Split(*quantiles, ",") {
			p, err := strconv.ParseFloat(f, 64)
			if err != nil || p < 0 || p > 1 {
				fmt.Fprintf(os.Stderr, "ptbench-go: bad quantile %q\n", f)
				os.Exit(2)
			}
			if i > 0 {
				qs += ","
			}
			qs += fmt.Sprintf("%.0f", quantile(v, p))
		}
		qs = ",\"lat_q_ns\":[" + qs + "]"
	}
	fmt.Printf("{\"design\":\"go1.19\",\"workload\":\"%s\",\"threads\":%d,\"ops\":%d,"+
		"\"elapsed_ns\":%d,\"cpu_s\":%.4f,\"wakeups\":%d,\"lat_p50_ns\":%.0f,"+
		"\"lat_p99_ns\":%.0f,\"lat_p999_ns\":%.0f,\"lat_max_ns\":%.0f,"+
		"\"bytes_per_timer\":%.2f,\"create_ns\":%.2f,\"cancel_ns\":%.2f,"+
		"\"fired\":%d,\"expected_ticks\":%d,\"rss_bytes\":%d%s%s}\n",
		*workload, *threads, ops, elapsed.Nanoseconds(), cpu, wakeups, quantile(v, 0.5), quantile(v, 0.99),
		quantile(v, 0.999), max, bytes, createNs, cancelNs, fired, expected, rss(), extra, qs)
}
